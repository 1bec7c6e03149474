package meta

import (
	"context"
	"database/sql"
	"io/fs"
	"sort"
	"testing"
)

// sqliteBefore creates a SQLite database at path as a store of the version
// before migration first left it (every embedded migration named below
// first applied and recorded), for a test of what first does to existing
// data. exec runs a statement on it or fails the test; the caller closes
// the database before opening a store on path.
func sqliteBefore(t *testing.T, path, first string) (db *sql.DB, exec func(q string, args ...any)) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	exec = func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	exec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_ns INTEGER NOT NULL)`)
	for _, name := range names {
		if name >= first {
			break
		}
		body, err := migrations.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		exec(string(body))
		exec(`INSERT INTO schema_migrations(name, applied_ns) VALUES (?, 1)`, name)
	}
	return db, exec
}
