-- Instant upload without an existence oracle (issue 16): every stored content
-- gets a secret random draw, fixed once, from which the daemon derives the
-- number of distinct owners it must have before its existence is revealed to
-- other users (upload/reveal.go). The draw is stored, not the threshold, so
-- the operator's threshold range can change without redrawing; it is drawn
-- with crypto/rand by the store (instant.go) when the content is first
-- recorded, so the lookup that patchHash runs never writes. Existing content
-- is drawn for right after this migration, in the same transaction.
--
-- Chunks: -1 until drawn (only between this statement and the backfill).
ALTER TABLE chunks ADD COLUMN reveal_draw INTEGER NOT NULL DEFAULT -1;
-- Files by content (file hash): kept when the last copy goes, so content
-- that comes back keeps its threshold (one short row per content ever stored).
CREATE TABLE file_draws (
    file_hash TEXT    PRIMARY KEY,
    draw      INTEGER NOT NULL
) WITHOUT ROWID;
-- Counting the distinct owners of a file content (file hash and size).
CREATE INDEX nodes_content_owner ON nodes (file_hash, size, user_id) WHERE is_dir = 0;
-- It covers what nodes_file_hash served (instant upload's lookup by content).
DROP INDEX nodes_file_hash;
