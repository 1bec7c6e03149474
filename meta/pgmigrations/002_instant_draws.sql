-- SQLite migration 007 (instant upload without an existence oracle, see
-- migrations/007_instant_draws.sql for what the draws are): each chunk's
-- secret draw, each file content's draw, and the index counting a content's
-- distinct owners. Content already stored is drawn for right after these
-- statements, in the same transaction (postMigration in postgres.go).
ALTER TABLE chunks ADD COLUMN reveal_draw BIGINT NOT NULL DEFAULT -1;
CREATE TABLE file_draws (
    file_hash TEXT   PRIMARY KEY,
    draw      BIGINT NOT NULL
);
CREATE INDEX nodes_content_owner ON nodes (file_hash, size, user_id) WHERE is_dir = 0;
DROP INDEX nodes_file_hash;
