package meta

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A data directory from before the name index (every migration up to 015
// applied) gets its existing names indexed by the migration: the index
// alone finds them, and keeps following renames afterwards.
func TestNameSearchMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	db, mustExec := sqliteBefore(t, path, "migrations/015")
	mustExec(`INSERT INTO users (id, name, pass_hash, created_ns) VALUES (1, 'alice', 'h', 1), (2, 'bob', 'h', 1)`)
	mustExec(`INSERT INTO nodes (user_id, path, parent, name, is_dir, mtime_ns) VALUES
		(1, '/', '', '', 1, 1), (2, '/', '', '', 1, 1),
		(1, '/Holiday', '/', 'Holiday', 1, 2),
		(1, '/Holiday/Beach.JPG', '/Holiday', 'Beach.JPG', 0, 3),
		(1, '/Holiday/beach-2.jpg', '/Holiday', 'beach-2.jpg', 0, 4),
		(2, '/beach.jpg', '/', 'beach.jpg', 0, 5)`)
	db.Close()

	s, err := OpenSQLite(ctx, path, nil)
	if err != nil {
		t.Fatalf("migrating: %v", err)
	}
	defer s.Close()
	find := func(pattern string, glob bool) []string {
		t.Helper()
		hits, more, err := s.SearchNames(ctx, 1, NameQuery{Pattern: pattern, Glob: glob, Limit: 10})
		if err != nil || more {
			t.Fatalf("search %q: %v (more %v)", pattern, err, more)
		}
		var out []string
		for _, n := range hits {
			out = append(out, n.Path)
		}
		return out
	}
	if got := find("BEACH", false); !slices.Equal(got, []string{"/Holiday/beach-2.jpg", "/Holiday/Beach.JPG"}) {
		t.Errorf("beach after the migration: %v", got)
	}
	if got := find("*.jpg", true); len(got) != 2 {
		t.Errorf("*.jpg after the migration: %v", got)
	}
	if err := s.Move(ctx, 1, "/Holiday/Beach.JPG", "/Holiday/Dunes.JPG", false); err != nil {
		t.Fatal(err)
	}
	if got := find("dune", false); !slices.Equal(got, []string{"/Holiday/Dunes.JPG"}) {
		t.Errorf("dune after a rename: %v", got)
	}
}

// TestSearchPlans pins how SQLite answers a search: the walk in time order
// reads the time index backwards (no sort of the user's nodes), and the
// index's candidates drive the look-up of their nodes (never a probe of
// every node against them).
func TestSearchPlans(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	plan := func(q string, args ...any) string {
		t.Helper()
		rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			out = append(out, detail)
		}
		return strings.Join(out, "\n")
	}
	where, args := NameQuery{}.filters(1, SearchPos{MTime: 5, ID: 5})
	p := plan(searchWalkSQL(where), append(args, 10)...)
	if !strings.Contains(p, "nodes_mtime") || strings.Contains(p, "TEMP B-TREE") {
		t.Errorf("walk plan:\n%s\nwant the time index in order, no sort", p)
	}
	p = plan(searchIndexSQL(where), append(append([]any{"616263"}, args...), 10)...)
	if !strings.HasPrefix(p, "SCAN node_names VIRTUAL TABLE") || !strings.Contains(p, "SEARCH nodes USING INTEGER PRIMARY KEY") {
		t.Errorf("index plan:\n%s\nwant the candidates first, each node by id", p)
	}
}
