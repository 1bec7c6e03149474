package meta

import (
	"context"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// The index holds exactly one entry per named node, with the grams of its
// name as it is now, after every kind of tree change and a user's deletion
// (a cascade, which fires the triggers too): nothing stale is left to
// grow the index or slow a search.
func TestNameIndexFollowsTree(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	a, err := s.CreateUser(ctx, "alice", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateUser(ctx, "bob", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1, 0)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range []int64{a.ID, b.ID} {
		_, err := s.Mkdir(ctx, u, "/d", now)
		must(err)
		for _, p := range []string{"/d/one", "/d/two", "/three"} {
			_, err := s.CommitFile(ctx, u, p, NewFile{ModTime: now})
			must(err)
		}
	}
	must(s.Move(ctx, a.ID, "/d", "/e", false))
	must(s.Move(ctx, a.ID, "/e/one", "/e/uno", false))
	must(s.Move(ctx, a.ID, "/three", "/e/two", true)) // over an existing one
	must(s.Copy(ctx, a.ID, "/e", "/f", false, true))
	must(s.Remove(ctx, a.ID, "/f/uno"))
	must(s.DeleteUser(ctx, b.ID))
	check := func() {
		t.Helper()
		var stale, missing int
		must(s.r.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM node_names WHERE docid NOT IN (SELECT id FROM nodes WHERE name <> '')),
			(SELECT count(*) FROM nodes WHERE name <> '' AND id NOT IN (SELECT docid FROM node_names))`).Scan(&stale, &missing))
		if stale != 0 || missing != 0 {
			t.Fatalf("index: %d stale entries, %d nodes missing", stale, missing)
		}
		rows, err := s.r.QueryContext(ctx, `SELECT n.name, f.grams FROM nodes AS n JOIN node_names AS f ON f.docid = n.id`)
		must(err)
		defer rows.Close()
		for rows.Next() {
			var name, grams string
			must(rows.Scan(&name, &grams))
			var want []string
			rs := []rune(strings.ToLower(name) + gramEnd)
			for i := 0; i+3 <= len(rs); i++ {
				want = append(want, strings.ToUpper(hex.EncodeToString([]byte(string(rs[i:i+3])))))
			}
			if grams != strings.Join(want, " ") {
				t.Errorf("%s indexed as %q, want %q", name, grams, strings.Join(want, " "))
			}
		}
		must(rows.Err())
	}
	check()
}
