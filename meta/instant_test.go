package meta

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// Content recorded before migration 007 gets its draw during the migration,
// and every draw stays what it was across restarts: a threshold is drawn
// once per content, not per process.
func TestDrawsBackfilledAndStableAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "meta.db")
	db, mustExec := sqliteBefore(t, path, "migrations/007")
	mustExec(`INSERT INTO users(id, name, pass_hash, created_ns) VALUES (1, 'alice', 'h', 1)`)
	mustExec(`INSERT INTO nodes(user_id, path, parent, name, is_dir, mtime_ns) VALUES (1, '/', '', '', 1, 1)`)
	mustExec(`INSERT INTO nodes(id, user_id, path, parent, name, is_dir, size, mtime_ns, file_hash) VALUES (10, 1, '/f', '/', 'f', 0, 3, 1, 'fh')`)
	mustExec(`INSERT INTO chunks(id, sha256, md5, size, created_ns) VALUES (20, 's1', 'm1', 3, 1)`)
	mustExec(`INSERT INTO file_chunks(node_id, idx, chunk_id) VALUES (10, 0, 20)`)
	db.Close()

	draws := func() (chunk, file int64) {
		t.Helper()
		s, err := OpenSQLite(ctx, path, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		hs, err := s.ChunksHeld(ctx, 2, "m1", 3, 10)
		if err != nil || len(hs) != 1 || hs[0].Owners != 1 {
			t.Fatalf("ChunksHeld = %+v %v", hs, err)
		}
		_, h, found, err := s.FileHeld(ctx, 2, "fh", 3, 10)
		if err != nil || !found || h.Owners != 1 {
			t.Fatalf("FileHeld = %+v %v %v", h, found, err)
		}
		return hs[0].Draw, h.Draw
	}
	c1, f1 := draws()
	if c1 == NoDraw || f1 == NoDraw || c1 < 0 || f1 < 0 || c1 >= DrawRange || f1 >= DrawRange {
		t.Fatalf("backfilled draws %d %d", c1, f1)
	}
	if c2, f2 := draws(); c2 != c1 || f2 != f1 {
		t.Fatalf("draws changed across a restart: %d %d, then %d %d", c1, f1, c2, f2)
	}
}
