-- Public links: a URL that lets whoever holds it reach one node of its
-- owner's tree (a file, or a folder and everything below it) without an
-- account. The link names the node by id, so it follows the node across
-- moves and renames; it ends with the node (ON DELETE CASCADE here, and
-- meta/trash.go drops the links of a subtree moved into the trash) and with
-- its owner. token_hash is the hex SHA-256 of the token (256 random bits,
-- so a fast hash is enough): the table never holds a usable token.
-- pass_hash is a bcrypt hash as users.pass_hash, '' for no password. perm:
-- 0 read, 1 upload only (a file drop), 2 read-write. expires_ns 0 never
-- expires; max_downloads 0 has no limit. AUTOINCREMENT: an id is never
-- given twice, so `share rm` of a stale id never revokes another link.
CREATE TABLE links (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id       INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    node_id       INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    token_hash    TEXT    NOT NULL UNIQUE,
    pass_hash     TEXT    NOT NULL DEFAULT '',
    perm          INTEGER NOT NULL,
    expires_ns    INTEGER NOT NULL DEFAULT 0,
    max_downloads INTEGER NOT NULL DEFAULT 0,
    downloads     INTEGER NOT NULL DEFAULT 0,
    created_ns    INTEGER NOT NULL,
    last_ns       INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX links_user ON links (user_id, id);
CREATE INDEX links_node ON links (node_id);
