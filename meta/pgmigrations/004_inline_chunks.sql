-- SQLite migration 009 (small chunks kept inside the database, see
-- migrations/009_inline_chunks.sql): on PostgreSQL a small file's bytes are
-- committed with its tree entry in one transaction too, and every node reads
-- them from here, not from the shared chunk store.
CREATE TABLE chunk_data (
    chunk_id BIGINT PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
    data     BYTEA  NOT NULL
);
