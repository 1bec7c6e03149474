package meta

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

// SQLite's reader connections stay open between queries however many ran
// at once: a query never pays for opening a connection (the schema read,
// a cold page cache) because an earlier burst ended. The pool is filled to
// its size with queries all open at once, then used again.
func TestSQLiteReadersStayOpen(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for round := range 3 {
		open := make([]*sql.Rows, readers)
		for i := range open {
			// Open rows hold their connection: readers of them at once.
			if open[i], err = s.r.QueryContext(ctx, `SELECT id FROM users`); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range open {
			r.Close()
		}
		st := s.r.Stats()
		if st.OpenConnections != readers || st.Idle != readers || st.MaxIdleClosed != 0 {
			t.Fatalf("round %d: after %d reads at once: %d connections open, %d idle, %d closed as surplus; want all %d kept",
				round, readers, st.OpenConnections, st.Idle, st.MaxIdleClosed, readers)
		}
	}
}
