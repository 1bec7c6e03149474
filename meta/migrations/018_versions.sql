-- File versions: the content a file held before a change of its content
-- replaced it (a commit over it, a file moved or copied over it, a restore).
-- A version belongs to the file's node, not to its path, so it follows the
-- file through renames and goes with the file when the file goes for good.
-- It keeps the replaced chunk list (version_chunks), sharing chunks with the
-- file and the other versions: a version costs only the chunks that
-- changed. saved_ns is when it was replaced, on the store's clock (retention
-- and thinning read it; mtime_ns is the client's). AUTOINCREMENT: a version
-- id is never given twice, so a stale id never names another version.
CREATE TABLE file_versions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    node_id      INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    author_id    INTEGER NOT NULL,
    size         INTEGER NOT NULL,
    mode         INTEGER NOT NULL DEFAULT 0,
    mtime_ns     INTEGER NOT NULL,
    file_hash    TEXT    NOT NULL DEFAULT '',
    content_md5  TEXT,
    content_sha1 TEXT,
    saved_ns     INTEGER NOT NULL
);
CREATE INDEX file_versions_node ON file_versions (node_id, id);
CREATE INDEX file_versions_user ON file_versions (user_id, id);

CREATE TABLE version_chunks (
    version_id INTEGER NOT NULL REFERENCES file_versions(id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    chunk_id   INTEGER NOT NULL REFERENCES chunks(id),
    PRIMARY KEY (version_id, idx)
) WITHOUT ROWID;
CREATE INDEX version_chunks_chunk ON version_chunks (chunk_id);
