-- SQLite migration 010 (what entries and dead properties cost against the
-- quota, see migrations/010_meta_charge.sql and meta/charge.go).
ALTER TABLE users ADD COLUMN use_space_meta BIGINT NOT NULL DEFAULT 0;
UPDATE users SET use_space_meta =
    (SELECT count(*) * 256 + coalesce(sum(octet_length(name)), 0) FROM nodes WHERE nodes.user_id = users.id AND nodes.path != '/')
  + (SELECT coalesce(sum(octet_length(p.ns) + octet_length(p.name) + octet_length(p.lang) + octet_length(p.value)), 0)
       FROM props p JOIN nodes n ON n.id = p.node_id WHERE n.user_id = users.id);
