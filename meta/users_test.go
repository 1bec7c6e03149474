package meta

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netdisk/errs"
)

// openTestStore opens a fresh SQLite store in t's temporary directory,
// closed when t ends.
func openTestStore(t *testing.T) *SQLStore {
	t.Helper()
	s, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "meta.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openTestFile opens a store on a new database file, for a test that
// closes it and opens the file again (closing is the test's); path is
// the file.
func openTestFile(t *testing.T) (s *SQLStore, path string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "meta.db")
	s, err := OpenSQLite(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, path
}

// openAliceAndBob is openTestStore with two plain users, for tests of what
// one user's tree must never show of the other's.
func openAliceAndBob(t *testing.T) (s *SQLStore, alice, bob User) {
	t.Helper()
	s = openTestStore(t)
	ctx := context.Background()
	var err error
	if alice, err = s.CreateUser(ctx, "alice", "h", false, 0); err != nil {
		t.Fatal(err)
	}
	if bob, err = s.CreateUser(ctx, "bob", "h", false, 0); err != nil {
		t.Fatal(err)
	}
	return s, alice, bob
}

// TestUserNamesIgnoreCase: ALICE and alice are one user: creating the second
// is Exists, and either spelling finds the account.
func TestUserNamesIgnoreCase(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	a, err := s.CreateUser(ctx, "alice", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, "ALICE", "h", false, 0); !errs.Is(err, errs.Exists) {
		t.Fatalf("ALICE next to alice: %v, want Exists", err)
	}
	for _, n := range []string{"alice", "ALICE", "Alice"} {
		u, err := s.UserByName(ctx, n)
		if err != nil || u.ID != a.ID {
			t.Fatalf("UserByName(%q) = %+v, %v; want alice", n, u, err)
		}
	}
}

// TestNameCaseMigrationRefusesDuplicates: a database from before migration
// 005 that holds two names differing only in case does not open; the error
// names them. Once the operator renames one, it opens and the rule holds.
func TestNameCaseMigrationRefusesDuplicates(t *testing.T) {
	ctx := context.Background()
	s, path := openTestFile(t)
	// Back to the schema before 005, where case duplicates could be made.
	for _, q := range []string{
		`DROP INDEX users_name_nocase`,
		`DELETE FROM schema_migrations WHERE name = 'migrations/005_users_name_nocase.sql'`,
	} {
		if _, err := s.w.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"alice", "ALICE", "bob"} {
		if _, err := s.CreateUser(ctx, n, "h", false, 0); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()

	_, err := OpenSQLite(ctx, path, nil)
	if err == nil || !strings.Contains(err.Error(), "ALICE, alice") && !strings.Contains(err.Error(), "alice, ALICE") {
		t.Fatalf("open with alice and ALICE: %v, want an error naming both", err)
	}
	// The failed open changed nothing: both are still there to choose from.
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE name IN ('alice', 'ALICE')`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("after the refused migration: %d of alice/ALICE (%v), want both", n, err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE users SET name = 'alice2' WHERE name = 'ALICE'`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s2, err := OpenSQLite(ctx, path, nil)
	if err != nil {
		t.Fatalf("open after renaming: %v", err)
	}
	defer s2.Close()
	if _, err := s2.CreateUser(ctx, "BOB", "h", false, 0); !errs.Is(err, errs.Exists) {
		t.Fatalf("BOB after migration: %v, want Exists", err)
	}
}

// A database migrated when the upload sessions were the second 002 (as every
// database made before the rename to 003 was) opens without applying them
// again, and records them under the new name.
func TestRenamedMigrationNotReapplied(t *testing.T) {
	ctx := context.Background()
	s, path := openTestFile(t)
	u, err := s.CreateUser(ctx, "alice", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateSession(ctx, Session{ID: "s1", UserID: u.ID, Path: "/f", Size: 1, ChunkSize: 1}, time.Unix(0, 0), time.Now()); err != nil {
		t.Fatal(err)
	}
	// What the previous file list recorded.
	if _, err := s.w.ExecContext(ctx, `UPDATE schema_migrations SET name = 'migrations/002_upload_sessions.sql' WHERE name = 'migrations/003_upload_sessions.sql'`); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s, err = OpenSQLite(ctx, path, nil)
	if err != nil {
		t.Fatalf("reopening a database of the old file list: %v", err)
	}
	defer s.Close()
	if _, err := s.Session(ctx, u.ID, "s1"); err != nil {
		t.Fatalf("the session made before the rename: %v", err)
	}
	var names []string
	rows, err := s.r.QueryContext(ctx, `SELECT name FROM schema_migrations ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	// Every migration once, under its current name (the list grows with
	// each new migration; the renamed one must not appear twice).
	want, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("recorded %v, want %v", names, want)
	}
}

// A database made before user ids were AUTOINCREMENT keeps every row through
// the table's rebuild (the rebuild must not cascade into the trees, sessions
// and quota records that refer to users), then never gives an id again, and
// its foreign keys hold as before.
func TestUsersAutoincrementMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	db, mustExec := sqliteBefore(t, path, "migrations/010")
	for id, name := range map[int]string{1: "admin", 2: "alice", 3: "bob"} {
		mustExec(`INSERT INTO users (id, name, pass_hash, is_admin, quota_total, created_ns) VALUES (?, ?, 'h', ?, 7, 1)`, id, name, id == 1)
		mustExec(`INSERT INTO nodes (user_id, path, parent, name, is_dir, mtime_ns) VALUES (?, '/', '', '', 1, 1)`, id)
	}
	mustExec(`INSERT INTO nodes (user_id, path, parent, name, is_dir, mtime_ns) VALUES (2, '/d', '/', 'd', 1, 1)`)
	mustExec(`INSERT INTO upload_sessions (id, user_id, path, size, chunk_size, state, created_ns, touched_ns) VALUES ('s1', 2, '/f', 1, 1, 'open', 1, 1)`)
	mustExec(`INSERT INTO quota_flushes (upload, user_id, seq, flushed) VALUES ('s1', 2, 1, 1)`)
	// bob, the newest, is deleted before the migration: the store cannot
	// know his id was given (SQLite kept no record of it).
	mustExec(`DELETE FROM users WHERE id = 3`)
	db.Close()

	s, err := OpenSQLite(ctx, path, nil)
	if err != nil {
		t.Fatalf("migrating: %v", err)
	}
	defer s.Close()
	alice, err := s.UserByName(ctx, "ALICE")
	if err != nil || alice.ID != 2 || alice.QuotaTotal != 7 {
		t.Fatalf("alice after the migration: %+v, %v", alice, err)
	}
	if admin, err := s.UserByName(ctx, "admin"); err != nil || !admin.IsAdmin {
		t.Fatalf("admin after the migration: %+v, %v", admin, err)
	}
	if _, err := s.Stat(ctx, 2, "/d"); err != nil {
		t.Fatalf("alice's tree after the migration: %v", err)
	}
	if _, err := s.Session(ctx, 2, "s1"); err != nil {
		t.Fatalf("alice's upload session after the migration: %v", err)
	}
	var fk int
	if err := s.w.QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Fatalf("foreign keys after the migration: %d, %v", fk, err)
	}
	if _, err := s.CreateUser(ctx, "alice", "h", false, 0); !errs.Is(err, errs.Exists) {
		t.Fatalf("a second alice: %v, want Exists (the name index is back)", err)
	}
	carol, err := s.CreateUser(ctx, "carol", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteUser(ctx, carol.ID); err != nil {
		t.Fatal(err)
	}
	dave, err := s.CreateUser(ctx, "dave", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if dave.ID <= carol.ID {
		t.Fatalf("dave got id %d after carol's %d was deleted", dave.ID, carol.ID)
	}
	// Deleting a user still takes their rows with them.
	if err := s.DeleteUser(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM nodes WHERE user_id = 2) + (SELECT count(*) FROM upload_sessions WHERE user_id = 2) + (SELECT count(*) FROM quota_flushes WHERE user_id = 2)`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("rows of a deleted user: %d, %v", left, err)
	}
}
