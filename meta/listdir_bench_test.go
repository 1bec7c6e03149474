package meta

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkListDir10k times the query behind PROPFIND Depth 1 of a
// 10,000-entry folder (meta.ListDir).
func BenchmarkListDir10k(b *testing.B) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "meta.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	u, err := s.CreateUser(ctx, "u", "x", false, 0)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Mkdir(ctx, u.ID, "/big", time.Now()); err != nil {
		b.Fatal(err)
	}
	// Other users' and folders' rows around it, as in a real database.
	err = s.tx(ctx, func(tx *sql.Tx) error {
		for i := range 30000 {
			dir := "/big"
			if i%3 != 0 {
				dir = fmt.Sprintf("/other%d", i%7)
			}
			p := fmt.Sprintf("%s/entry-%05d.txt", dir, i)
			if _, err := tx.ExecContext(ctx, `INSERT INTO nodes(user_id, path, parent, name, is_dir, size, mtime_ns, file_hash) VALUES (?,?,?,?,0,?,?,?)`,
				u.ID, p, dir, filepath.Base(p), i, i, fmt.Sprintf("%032x", i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		_, kids, err := s.ListDir(ctx, u.ID, "/big")
		if err != nil || len(kids) != 10000 {
			b.Fatalf("ListDir: %d entries, %v", len(kids), err)
		}
	}
}
