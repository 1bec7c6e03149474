package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func writeBytes(b []byte) func(io.Writer) error {
	return func(w io.Writer) error { _, err := w.Write(b); return err }
}

// TestWrite: the data stands at dst with the asked mode, over an older
// file, in a folder made for it, and no temporary file is left.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "a", "b", "file")
	for _, data := range [][]byte{[]byte("first"), []byte("second, longer")} {
		if err := Write(dst, 0o640, writeBytes(data)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(dst); err != nil || !bytes.Equal(got, data) {
			t.Fatalf("dst holds %q, %v; want %q", got, err, data)
		}
	}
	if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, %v; want 0640", st.Mode(), err)
	}
	ents, _ := os.ReadDir(filepath.Dir(dst))
	if len(ents) != 1 {
		t.Fatalf("folder holds %d names, want only the file: %v", len(ents), ents)
	}
}

// TestWriteFailureKeepsOld: a write that fails leaves the old dst as it was
// and removes the temporary file.
func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	dst := filepath.Join(dir, "file")
	if err := Write(dst, 0o644, writeBytes([]byte("old"))); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(dst, 0o644, func(w io.Writer) error {
		w.Write([]byte("half"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "old" {
		t.Fatalf("dst holds %q after a failed write, want old", got)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("folder holds %d names, want only the file: %v", len(ents), ents)
	}
}

// TestWriteInStaysInRoot: a name that leaves the root through ".." or a
// symlinked folder is refused, and nothing is written outside.
func TestWriteInStaysInRoot(t *testing.T) {
	base := t.TempDir()
	inside := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{inside, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(inside, "link")); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(inside)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, rel := range []string{"../outside/f", "link/f"} {
		if err := WriteIn(root, rel, 0o644, writeBytes([]byte("x"))); err == nil {
			t.Errorf("WriteIn(%q) succeeded", rel)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("written outside the root: %v", ents)
	}
	if err := WriteIn(root, "in/dir/f", 0o644, writeBytes([]byte("x"))); err != nil {
		t.Fatal(err)
	}
}

// TestRename: the moved file stands at dst, the old name is gone.
func TestRename(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "f.part")
	if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "f")
	if err := Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("old name still there: %v", err)
	}
	if got, _ := os.ReadFile(dst); string(got) != "x" {
		t.Fatalf("dst holds %q", got)
	}
}
