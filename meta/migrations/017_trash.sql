-- The trash: one item per deleted node, a folder being one item with its
-- whole subtree. The item's nodes stay in nodes, with their chunk lists and
-- dead properties (so GC keeps their chunks and a restore brings back
-- everything, versions included), re-rooted under the hidden path '#<id>':
-- a path that does not start with '/' is outside every path a user can name
-- and every subtree range ('#' sorts before '/'), so no listing, walk or
-- lookup reaches it. Deleting and restoring a subtree is then one UPDATE of
-- its paths, as a move is. path is where the item was; size the bytes of
-- its files; deleted_by the account that deleted it. AUTOINCREMENT: an
-- item id is never given twice, so a stale id never names another item.
CREATE TABLE trash_items (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id    INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    path       TEXT    NOT NULL,
    is_dir     INTEGER NOT NULL,
    size       INTEGER NOT NULL,
    deleted_ns INTEGER NOT NULL,
    deleted_by INTEGER NOT NULL
);
CREATE INDEX trash_items_user ON trash_items (user_id, id);
CREATE INDEX trash_items_age ON trash_items (deleted_ns);
