-- SQLite migration 026 (the ACME certificates nodes share, see
-- migrations/026_acme_cache.sql).
CREATE TABLE acme_cache (
    name TEXT COLLATE "C" PRIMARY KEY,
    data BYTEA NOT NULL
);
