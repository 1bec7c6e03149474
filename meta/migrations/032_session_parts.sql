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
