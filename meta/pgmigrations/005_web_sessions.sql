-- SQLite migration 011 (the web page's sessions, see
-- migrations/011_web_sessions.sql). PostgreSQL needs no counterpart of 010:
-- identity columns draw from a sequence, which never gives an id again.
CREATE TABLE web_sessions (
    token_hash TEXT COLLATE "C" PRIMARY KEY,
    user_id    BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf       TEXT   NOT NULL,
    created_ns BIGINT NOT NULL,
    last_ns    BIGINT NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (user_id, created_ns);
CREATE INDEX web_sessions_last ON web_sessions (last_ns);
CREATE INDEX web_sessions_created ON web_sessions (created_ns);
