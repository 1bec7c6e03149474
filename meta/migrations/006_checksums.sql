-- Whole-content checksums of each file version, as WebDAV clients (rclone's
-- owncloud/nextcloud modes) compare them: the protocol's file_hash is an MD5
-- of chunk hashes, not of the content. NULL means not known yet: a WebDAV PUT
-- knows them at commit; chunked uploads and mount writes leave them to the
-- background pass (drive/checksums.go), which finds the NULL rows again after
-- a restart. A value is only ever written for the content it was computed on.
ALTER TABLE nodes ADD COLUMN content_md5 TEXT;
ALTER TABLE nodes ADD COLUMN content_sha1 TEXT;
-- Listings return the checksums (oc:checksums): keep the covering index covering.
DROP INDEX nodes_children;
CREATE INDEX nodes_children ON nodes (user_id, parent, name, id, path, is_dir, size, mode, mtime_ns, file_hash, content_md5, content_sha1);
-- The background pass's queue.
CREATE INDEX nodes_sums_pending ON nodes (id) WHERE is_dir = 0 AND content_md5 IS NULL;
