-- Users, their trees, files as ordered chunk lists, chunks, dead properties.
CREATE TABLE users (
    id                   INTEGER PRIMARY KEY,
    name                 TEXT    NOT NULL UNIQUE,
    pass_hash            TEXT    NOT NULL,
    is_admin             INTEGER NOT NULL DEFAULT 0,
    quota_total          INTEGER NOT NULL DEFAULT 0, -- bytes; 0 = unlimited
    use_space_finished   INTEGER NOT NULL DEFAULT 0, -- sum of the user's file sizes
    use_space_unfinished INTEGER NOT NULL DEFAULT 0, -- bytes received in open upload sessions
    created_ns           INTEGER NOT NULL
);

-- One row per file or directory. path is the full, cleaned path ("/" for the
-- root); parent is the parent's path ("" for the root). Paths, not parent ids,
-- key the tree so that a lookup is one indexed query whatever the depth.
CREATE TABLE nodes (
    id         INTEGER PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    path       TEXT    NOT NULL,
    parent     TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    is_dir     INTEGER NOT NULL,
    size       INTEGER NOT NULL DEFAULT 0,
    mode       INTEGER NOT NULL DEFAULT 0,
    mtime_ns   INTEGER NOT NULL,
    file_hash  TEXT    NOT NULL DEFAULT '',
    UNIQUE (user_id, path)
);
CREATE INDEX nodes_parent ON nodes (user_id, parent, name);

-- Chunks by content. sha256 is the storage identity; md5 is the protocol's
-- name and deliberately not unique (two different chunks may share an MD5).
CREATE TABLE chunks (
    id         INTEGER PRIMARY KEY,
    sha256     TEXT    NOT NULL UNIQUE,
    md5        TEXT    NOT NULL,
    size       INTEGER NOT NULL,
    created_ns INTEGER NOT NULL
);
CREATE INDEX chunks_md5 ON chunks (md5);

CREATE TABLE file_chunks (
    node_id  INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    idx      INTEGER NOT NULL,
    chunk_id INTEGER NOT NULL REFERENCES chunks(id),
    PRIMARY KEY (node_id, idx)
) WITHOUT ROWID;
CREATE INDEX file_chunks_chunk ON file_chunks (chunk_id);

-- WebDAV dead properties (PROPPATCH), stored as the property's inner XML.
CREATE TABLE props (
    node_id INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    ns      TEXT    NOT NULL,
    name    TEXT    NOT NULL,
    value   TEXT    NOT NULL,
    lang    TEXT    NOT NULL DEFAULT '',
    PRIMARY KEY (node_id, ns, name)
) WITHOUT ROWID;
