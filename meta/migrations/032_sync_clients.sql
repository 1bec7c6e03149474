-- The parts a sync client sends to a chunked upload (Nextcloud's chunking,
-- dav/ncupload.go), as they came: any size, any order, possibly sent again.
-- A part is stored as pieces of at most the chunk size in the chunk store
-- (content-addressed chunk records), so any node can continue or assemble an
-- upload another node began, and the pieces are kept alive (the
-- `unreferenced` condition in chunks.go) while their session is open. The
-- assembly re-cuts the parts, in order, into the file's own chunks; the rows
-- go with the session (merged, aborted or expired).
CREATE TABLE session_parts (
    session_id TEXT    NOT NULL REFERENCES upload_sessions(id) ON DELETE CASCADE,
    name       TEXT    NOT NULL,                 -- the client's name of the part
    seq        INTEGER NOT NULL,                 -- the piece's place in the part
    chunk_id   INTEGER NOT NULL REFERENCES chunks(id),
    touched_ns INTEGER NOT NULL,                 -- when the part arrived
    PRIMARY KEY (session_id, name, seq)
) WITHOUT ROWID;
CREATE INDEX session_parts_chunk ON session_parts (chunk_id);

-- Login Flow v2 sign-ins in progress (web/loginflow.go), in the store the
-- nodes share, so a flow started on one node is granted on another and
-- polled on either. The tokens are kept by their SHA-256 only; no password
-- is kept: the app token is made when the granted flow is collected.
CREATE TABLE login_flows (
    poll_hash  TEXT    PRIMARY KEY,                  -- SHA-256 of the poll token
    login_hash TEXT    NOT NULL UNIQUE,              -- SHA-256 of the login token
    device     TEXT    NOT NULL,                     -- the client's User-Agent
    server     TEXT    NOT NULL,                     -- the base URL the client reached
    user_id    INTEGER REFERENCES users(id) ON DELETE CASCADE, -- granted by; NULL while pending
    expires_ns INTEGER NOT NULL
);
CREATE INDEX login_flows_expires ON login_flows (expires_ns);
