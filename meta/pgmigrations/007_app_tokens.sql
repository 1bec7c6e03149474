-- SQLite migration 013 (app passwords, see migrations/013_app_tokens.sql).
CREATE TABLE app_tokens (
    user_id    BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    name       TEXT   NOT NULL,
    token_hash TEXT COLLATE "C" PRIMARY KEY,
    created_ns BIGINT NOT NULL,
    last_ns    BIGINT NOT NULL DEFAULT 0
);
CREATE UNIQUE INDEX app_tokens_user_name ON app_tokens (user_id, name);
