package meta

import (
	"context"
	"path/filepath"
	"testing"
)

// A statement runs as prepared, however its bindings change: go-sqlite3
// clears them before each execution, which (without the planner stability
// setting) makes SQLite parse and plan the statement again every time. The
// statements are a GET's look-ups, run as go-sqlite3 runs them, on a
// connection opened as any other (the setting comes with every connection).
func TestStatementsAreNotPreparedAgain(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	s, err := OpenSQLite(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, q := range map[string]string{
		"OpenFile": openFileSQL,
		"Mounts":   mountsSQL,
		"user":     `SELECT id, name FROM users WHERE id = ?`,
	} {
		n, err := reprepares(path, q, 1, 20)
		if err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s: prepared again %d times in 20 runs, want 0", name, n)
		}
	}
}
