-- The parts of the sync clients' chunked uploads and the pending Login Flow v2
-- sign-ins: see the SQLite migration
-- 032_sync_clients.sql.
CREATE TABLE session_parts (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES upload_sessions(id) ON DELETE CASCADE,
    name       TEXT COLLATE "C" NOT NULL,
    seq        BIGINT NOT NULL,
    chunk_id   BIGINT NOT NULL REFERENCES chunks(id),
    touched_ns BIGINT NOT NULL,
    PRIMARY KEY (session_id, name, seq)
);
CREATE INDEX session_parts_chunk ON session_parts (chunk_id);

CREATE TABLE login_flows (
    poll_hash  TEXT COLLATE "C" PRIMARY KEY,
    login_hash TEXT COLLATE "C" NOT NULL UNIQUE,
    device     TEXT   NOT NULL,
    server     TEXT   NOT NULL,
    user_id    BIGINT REFERENCES users(id) ON DELETE CASCADE,
    expires_ns BIGINT NOT NULL
);
CREATE INDEX login_flows_expires ON login_flows (expires_ns);
