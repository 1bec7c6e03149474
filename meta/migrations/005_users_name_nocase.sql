-- User names are unique without regard to case: ALICE and alice are one user.
-- Names are ASCII (drive.ValidUserName), where NOCASE folding is exact. A
-- database that already holds two names differing only in case makes this
-- fail, and the daemon refuses to start naming them (see checkNameCase in
-- sqlite.go): silently picking one would lock the other out of their files.
CREATE UNIQUE INDEX users_name_nocase ON users (name COLLATE NOCASE);
