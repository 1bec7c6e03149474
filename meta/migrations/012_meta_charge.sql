-- What a user's entries and dead properties cost against their quota
-- (meta/charge.go): every file and folder but the root is EntryBytes (256)
-- plus the bytes of its name, every property the bytes of its namespace,
-- name, language and value. Kept apart from use_space_finished, which stays
-- the sum of the user's file sizes; a commit is admitted when
-- use_space_finished + use_space_meta stays within quota_total.
ALTER TABLE users ADD COLUMN use_space_meta INTEGER NOT NULL DEFAULT 0;
UPDATE users SET use_space_meta =
    (SELECT count(*) * 256 + ifnull(sum(octet_length(name)), 0) FROM nodes WHERE nodes.user_id = users.id AND nodes.path != '/')
  + (SELECT ifnull(sum(octet_length(p.ns) + octet_length(p.name) + octet_length(p.lang) + octet_length(p.value)), 0)
       FROM props p JOIN nodes n ON n.id = p.node_id WHERE n.user_id = users.id);
