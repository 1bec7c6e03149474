-- SQLite migration 014 (symbolic links, see migrations/014_symlinks.sql).
ALTER TABLE nodes ADD COLUMN link_target TEXT;
DROP INDEX nodes_children;
CREATE INDEX nodes_children ON nodes (user_id, parent, name) INCLUDE (id, path, is_dir, size, mode, mtime_ns, file_hash, content_md5, content_sha1, link_target);
DROP INDEX nodes_sums_pending;
CREATE INDEX nodes_sums_pending ON nodes (id) WHERE is_dir = 0 AND content_md5 IS NULL AND link_target IS NULL;
