package meta

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// A restore charges back exactly what the delete gave back, whether the
// item kept its charge or is measured by walking (items trashed before the
// store kept it), under its own name or a restored one; TrashCost agrees
// with the walk.
func TestTrashKeepsItsCharge(t *testing.T) {
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
	charged := func() (meta, finished int64) {
		t.Helper()
		if err := s.r.QueryRowContext(ctx, `SELECT use_space_meta, use_space_finished FROM users WHERE id = ?`, u.ID).Scan(&meta, &finished); err != nil {
			t.Fatal(err)
		}
		return meta, finished
	}
	now := time.Now()
	for _, d := range []string{"/d", "/d/sub", "/d/sub/deeper"} {
		if _, err := s.Mkdir(ctx, u.ID, d, now); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range []string{"/d/a.txt", "/d/sub/bb.txt", "/d/sub/deeper/ccc.txt", "/d/sub/gone.txt"} {
		c := Chunk{SHA256: "sha" + p, MD5: "md5" + p, Size: int64(10 + i), Data: make([]byte, 10+i)}
		if _, err := s.CommitFile(ctx, u.ID, p, NewFile{Size: c.Size, FileHash: "h" + p, ModTime: now, Chunks: []Chunk{c}}); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.Stat(ctx, u.ID, "/d/sub")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PatchProps(ctx, n.ID, []Prop{{Space: "urn:x", Local: "color", InnerXML: "a long enough value"}}, nil); err != nil {
		t.Fatal(err)
	}
	// A file deleted first is folded into the folder's item, its charge
	// with it.
	if err := s.Remove(ctx, u.ID, "/d/sub/gone.txt"); err != nil {
		t.Fatal(err)
	}
	wantMeta, wantFinished := charged()
	// Taken back after each round: the folded file is in the item.
	wantMeta += EntryCharge("gone.txt")
	wantFinished += 13

	restore := func(walk bool) string {
		t.Helper()
		if err := s.Remove(ctx, u.ID, "/d"); err != nil {
			t.Fatal(err)
		}
		its, err := s.ListTrash(ctx, u.ID, 0, 1)
		if err != nil || len(its) != 1 || its[0].Path != "/d" {
			t.Fatalf("trash: %+v %v", its, err)
		}
		id := its[0].ID
		if walk {
			if _, err := s.w.ExecContext(ctx, `UPDATE trash_items SET charge = NULL WHERE id = ?`, id); err != nil {
				t.Fatal(err)
			}
		}
		cost, err := s.TrashCost(ctx, u.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if !walk && cost != wantFinished+wantMeta {
			t.Errorf("TrashCost = %d, want the item's bytes and charge %d", cost, wantFinished+wantMeta)
		}
		var dst string
		err = s.Tx(ctx, func(tx *Tx) error {
			dst, _, err = s.RestoreTrashTx(ctx, tx, u.ID, id, NoGrowthLimit)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return dst
	}
	for _, walk := range []bool{false, true} {
		if dst := restore(walk); dst != "/d" {
			t.Fatalf("restored to %s", dst)
		}
		if m, f := charged(); m != wantMeta || f != wantFinished {
			t.Errorf("walk=%v: charged %d + %d bytes after the restore, want %d + %d", walk, m, f, wantMeta, wantFinished)
		}
	}
	// Restored under another name, the item's own entry is charged for
	// that name.
	if _, err := s.Mkdir(ctx, u.ID, "/x", now); err != nil {
		t.Fatal(err)
	}
	base, _ := charged()
	if err := s.Remove(ctx, u.ID, "/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Mkdir(ctx, u.ID, "/x", now); err != nil {
		t.Fatal(err)
	}
	its, _ := s.ListTrash(ctx, u.ID, 0, 1)
	var dst string
	err = s.Tx(ctx, func(tx *Tx) error {
		dst, _, err = s.RestoreTrashTx(ctx, tx, u.ID, its[0].ID, NoGrowthLimit)
		return err
	})
	if err != nil || dst != "/x (restored)" {
		t.Fatalf("restore over a taken name: %q, %v", dst, err)
	}
	if m, _ := charged(); m != base+EntryCharge("x (restored)") {
		t.Errorf("charged %d after a restore as %q, want %d", m, dst, base+EntryCharge("x (restored)"))
	}
}
