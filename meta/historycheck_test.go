package meta

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// CheckHistory (fsck) finds every kind of broken history reference, each
// on its line, and nothing in a sound history. The foreign keys are turned
// off to break them, as a hand repair or a copy without them could.
func TestCheckHistoryFindsBrokenReferences(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "meta.db")
	s, err := OpenSQLite(ctx, dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	u, err := s.CreateUser(ctx, "u", "x", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.CreateUser(ctx, "v", "x", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	c := func(name string, size int64) Chunk {
		return Chunk{SHA256: "sha-" + name, MD5: "md5-" + name, Size: size, Data: make([]byte, size)}
	}
	commit := func(uid int64, p string, cs ...Chunk) Node {
		var size int64
		for _, c := range cs {
			size += c.Size
		}
		n, err := s.CommitFile(ctx, uid, p, NewFile{Size: size, FileHash: "h-" + cs[0].SHA256, ModTime: time.Now(), Chunks: cs})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Five files with a version each; one of them, then, in the trash.
	var files []Node
	for i, p := range []string{"/a", "/b", "/c", "/d", "/e"} {
		commit(u.ID, p, c(p+"1", int64(10+i)))
		files = append(files, commit(u.ID, p, c(p+"2", 3), c(p+"3", 4)))
	}
	if err := s.Remove(ctx, u.ID, "/e"); err != nil {
		t.Fatal(err)
	}
	if broken, err := s.CheckHistory(ctx); err != nil || len(broken) != 0 {
		t.Fatalf("a sound history: %q, %v", broken, err)
	}
	version := func(n Node) int64 {
		vs, err := s.NodeVersions(ctx, n.ID)
		if err != nil || len(vs) != 1 {
			t.Fatalf("versions of %s: %+v %v", n.Path, vs, err)
		}
		return vs[0].ID
	}
	va, vb, vc, vd := version(files[0]), version(files[1]), version(files[2]), version(files[3])
	// A connection of its own, as the sqlite3 shell's: foreign keys off.
	db, err := sql.Open("sqlite3", "file:"+dbPath+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = func() error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		for _, q := range []struct {
			sql  string
			args []any
		}{
			// /a's file goes without its version.
			{`DELETE FROM nodes WHERE id = ?`, []any{files[0].ID}},
			// /b's version says it is another user's.
			{`UPDATE file_versions SET user_id = ? WHERE id = ?`, []any{v.ID, vb}},
			// /c's version lost its chunk's record.
			{`DELETE FROM chunks WHERE sha256 = 'sha-/c1'`, nil},
			// /d's version says more bytes than its chunks hold.
			{`UPDATE file_versions SET size = size + 1 WHERE id = ?`, []any{vd}},
			// /e, in the trash, lost one of its chunks' records.
			{`DELETE FROM chunks WHERE sha256 = 'sha-/e3'`, nil},
		} {
			if _, err := tx.ExecContext(ctx, q.sql, q.args...); err != nil {
				return err
			}
		}
		return tx.Commit()
	}()
	if err != nil {
		t.Fatal(err)
	}
	broken, err := s.CheckHistory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"version " + itoa(va) + " of user " + itoa(u.ID) + " belongs to node " + itoa(files[0].ID) + ", which is gone",
		"version " + itoa(vb) + " of user " + itoa(v.ID) + " belongs to a file of user " + itoa(u.ID),
		"version " + itoa(vc) + ": chunk 0 (id ",
		"version " + itoa(vc) + " is 12 bytes but its chunks hold 0",
		"version " + itoa(vd) + " is 14 bytes but its chunks hold 13",
		"node " + itoa(files[4].ID) + ": chunk 1 (id ",
	} {
		if !slices.ContainsFunc(broken, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("CheckHistory lacks %q:\n%s", want, strings.Join(broken, "\n"))
		}
	}
	if len(broken) != 6 {
		t.Errorf("CheckHistory gave %d lines, want 6:\n%s", len(broken), strings.Join(broken, "\n"))
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
