-- The parts of the sync clients' chunked uploads: see the SQLite migration
-- 032_session_parts.sql.
CREATE TABLE session_parts (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES upload_sessions(id) ON DELETE CASCADE,
    name       TEXT COLLATE "C" NOT NULL,
    seq        BIGINT NOT NULL,
    chunk_id   BIGINT NOT NULL REFERENCES chunks(id),
    touched_ns BIGINT NOT NULL,
    PRIMARY KEY (session_id, name, seq)
);
CREATE INDEX session_parts_chunk ON session_parts (chunk_id);
