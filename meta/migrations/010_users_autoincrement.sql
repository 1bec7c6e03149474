-- User ids are never given again. Without AUTOINCREMENT SQLite gives a new
-- row the largest id plus one, so deleting the newest user handed their id
-- to the next one, and everything still keyed by that id outside the users'
-- own rows (async tasks and agents' work, lock owners, a signed-in cookie)
-- became the newcomer's. AUTOINCREMENT keeps the highest id ever used in
-- sqlite_sequence. SQLite cannot add it to a table, so the table is rebuilt;
-- the migration runs with foreign keys off (sqlite.go, rebuildMigrations),
-- else dropping the old table would delete every user's tree with it.
CREATE TABLE users_new (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    name                 TEXT    NOT NULL UNIQUE,
    pass_hash            TEXT    NOT NULL,
    is_admin             INTEGER NOT NULL DEFAULT 0,
    quota_total          INTEGER NOT NULL DEFAULT 0, -- bytes; 0 = unlimited
    use_space_finished   INTEGER NOT NULL DEFAULT 0, -- sum of the user's file sizes
    use_space_unfinished INTEGER NOT NULL DEFAULT 0, -- bytes received in open upload sessions
    created_ns           INTEGER NOT NULL
);
INSERT INTO users_new (id, name, pass_hash, is_admin, quota_total, use_space_finished, use_space_unfinished, created_ns)
    SELECT id, name, pass_hash, is_admin, quota_total, use_space_finished, use_space_unfinished, created_ns FROM users;
DROP TABLE users;
ALTER TABLE users_new RENAME TO users;
CREATE UNIQUE INDEX users_name_nocase ON users (name COLLATE NOCASE);
