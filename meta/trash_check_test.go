package meta

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// CheckTrash (fsck) finds an item whose nodes are gone and hidden nodes
// whose item is gone, and nothing in a sound trash.
func TestCheckTrashFindsLostReferences(t *testing.T) {
	ctx := context.Background()
	s, err := OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := s.CreateUser(ctx, "u", "x", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/a", "/b"} {
		if _, err := s.Mkdir(ctx, u.ID, p, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := s.Remove(ctx, u.ID, p); err != nil {
			t.Fatal(err)
		}
	}
	if lost, err := s.CheckTrash(ctx); err != nil || len(lost) != 0 {
		t.Fatalf("a sound trash: %q, %v", lost, err)
	}
	its, _ := s.ListTrash(ctx, u.ID, 0, 10)
	err = s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM nodes WHERE path = ?`, trashRoot(its[0].ID)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM trash_items WHERE id = ?`, its[1].ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	lost, err := s.CheckTrash(ctx)
	if err != nil || len(lost) != 2 || !strings.Contains(lost[0], "(/b) has no node") || !strings.Contains(lost[1], "which has no item") {
		t.Fatalf("CheckTrash = %q, %v", lost, err)
	}
}
