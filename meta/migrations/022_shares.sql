-- Shares between users (meta/shares.go has the design). A group is a named
-- set of users an admin keeps; a share names one node of its owner's tree
-- (by id, so it follows the node across moves and dies with it when the
-- node is expunged) and one recipient, a user or a group, with a write
-- flag. Each recipient sees a share at an entry of their own tree: a
-- folder row in nodes, named by share_mounts, that they may rename or move
-- like any of theirs. share_id is set to NULL when the share goes by
-- cascade (its node expunged, its owner or group deleted): the entry then
-- still names itself as a dead share, so the drive hides and prunes it
-- rather than leave an empty folder behind. AUTOINCREMENT: an id is never
-- given twice, so a stale one never names another share or group.
CREATE TABLE user_groups (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    name       TEXT    NOT NULL UNIQUE COLLATE NOCASE,
    created_ns INTEGER NOT NULL
);
CREATE TABLE group_members (
    group_id INTEGER NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
    user_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);
CREATE INDEX group_members_user ON group_members (user_id);
CREATE TABLE shares (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_id   INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    node_id    INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    to_user    INTEGER REFERENCES users(id) ON DELETE CASCADE,
    to_group   INTEGER REFERENCES user_groups(id) ON DELETE CASCADE,
    can_write  INTEGER NOT NULL,
    created_ns INTEGER NOT NULL,
    CHECK ((to_user IS NULL) <> (to_group IS NULL))
);
CREATE UNIQUE INDEX shares_node_user ON shares (node_id, to_user) WHERE to_user IS NOT NULL;
CREATE UNIQUE INDEX shares_node_group ON shares (node_id, to_group) WHERE to_group IS NOT NULL;
CREATE INDEX shares_owner ON shares (owner_id, id);
CREATE INDEX shares_group ON shares (to_group);
CREATE TABLE share_mounts (
    node_id  INTEGER PRIMARY KEY REFERENCES nodes(id) ON DELETE CASCADE,
    user_id  INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    share_id INTEGER REFERENCES shares(id) ON DELETE SET NULL
);
CREATE INDEX share_mounts_user ON share_mounts (user_id);
CREATE INDEX share_mounts_share ON share_mounts (share_id);
