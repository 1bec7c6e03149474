-- Listing a folder (PROPFIND Depth 1, ListDir) reads every child's columns in
-- name order. With only (user_id, parent, name) indexed, each child costs an
-- index entry and a table lookup by rowid; an index that also holds what a
-- listing returns answers from the index alone (a covering index), about a
-- third less work for a 10,000-entry folder. It replaces nodes_parent, which
-- is its prefix, so a write still updates the same number of indexes.
CREATE INDEX nodes_children ON nodes (user_id, parent, name, id, path, is_dir, size, mode, mtime_ns, file_hash);
DROP INDEX nodes_parent;
