-- Symbolic links: a third kind of node beside files and folders. A link is a
-- row with is_dir = 0, no chunks, file_hash '' and its target in link_target
-- (NULL for every file and folder, so the rows already here stay what they
-- were). The target is an opaque string of at most 4,096 bytes that the
-- server stores and returns but never resolves: the client's kernel follows
-- it, as on a local filesystem, so a link cannot make the server read
-- outside the user's tree. size is the target's length (what lstat shows),
-- and a link is charged that many bytes like a file of that size.
ALTER TABLE nodes ADD COLUMN link_target TEXT;
-- Listings return the target: keep the covering index covering.
DROP INDEX nodes_children;
CREATE INDEX nodes_children ON nodes (user_id, parent, name, id, path, is_dir, size, mode, mtime_ns, file_hash, content_md5, content_sha1, link_target);
-- A link has no content to checksum: keep it out of the background pass's queue.
DROP INDEX nodes_sums_pending;
CREATE INDEX nodes_sums_pending ON nodes (id) WHERE is_dir = 0 AND content_md5 IS NULL AND link_target IS NULL;
