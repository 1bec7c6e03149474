-- Upload sessions of the chunked upload API (package upload) and the chunks
-- each has received. A session_chunks row keeps its chunk alive (see the
-- `unreferenced` condition in chunks.go) until the session merges into a file,
-- is abandoned or expires.
CREATE TABLE upload_sessions (
    id          TEXT    PRIMARY KEY,                 -- the uploadId: random hex
    user_id     INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    path        TEXT    NOT NULL,                    -- cleaned target path
    size        INTEGER NOT NULL,                    -- declared file size
    chunk_size  INTEGER NOT NULL,                    -- the chunk size the session was cut at
    file_hash   TEXT    NOT NULL DEFAULT '',         -- declared at init, '' when not given
    state       TEXT    NOT NULL DEFAULT 'open',     -- open | merged
    received    INTEGER NOT NULL DEFAULT 0,          -- bytes counted in users.use_space_unfinished
    replaces    INTEGER NOT NULL DEFAULT 0,          -- size of the file at path at init (quota credit)
    result_hash TEXT    NOT NULL DEFAULT '',         -- merged: the committed file hash
    created_ns  INTEGER NOT NULL,
    touched_ns  INTEGER NOT NULL                     -- last activity, for expiry
);
CREATE INDEX upload_sessions_resume ON upload_sessions (user_id, path, size, state);
CREATE INDEX upload_sessions_idle ON upload_sessions (state, touched_ns);

CREATE TABLE session_chunks (
    session_id TEXT    NOT NULL REFERENCES upload_sessions(id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    chunk_id   INTEGER NOT NULL REFERENCES chunks(id),
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;
CREATE INDEX session_chunks_chunk ON session_chunks (chunk_id);

-- Pending proof-of-ownership challenges: single use, expiring. idx is the
-- chunk index, or -1 for a whole-file challenge. proof is what the server
-- computed from its own copy; target lists the chunks (JSON) the proof unlocks.
CREATE TABLE upload_challenges (
    session_id TEXT    NOT NULL REFERENCES upload_sessions(id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    nonce      TEXT    NOT NULL,
    proof      TEXT    NOT NULL,
    target     TEXT    NOT NULL,
    expires_ns INTEGER NOT NULL,
    PRIMARY KEY (session_id, idx)
) WITHOUT ROWID;

-- Instant upload looks files up by content.
CREATE INDEX nodes_file_hash ON nodes (file_hash) WHERE is_dir = 0;
