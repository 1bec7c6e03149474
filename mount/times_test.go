package mount_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func stat(t *testing.T, p string) syscall.Stat_t {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func ts(t syscall.Timespec) time.Time { return time.Unix(t.Sec, t.Nsec) }

// TestTimesAndLinks: through the mount, a folder's mtime and ctime move when
// entries are added, removed or renamed in it; a file's ctime moves on
// chmod, rename and writes; atime shows the mtime; a folder's nlink is 2 +
// its subfolders.
func TestTimesAndLinks(t *testing.T) {
	e := setup(t)
	// Subfolders made elsewhere count too (made before the mount lists
	// anything, so no listing of ours is older than they are).
	ctx := context.Background()
	for _, n := range []string{"/x", "/x/a", "/x/b", "/x/c"} {
		if err := e.be.Mkdir(ctx, n, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.be.Remove(ctx, "/x/c"); err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(e.mnt, "d")
	if err := syscall.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(e.mnt, "other")
	if err := syscall.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	prev := stat(t, d)
	if prev.Nlink != 2 {
		t.Fatalf("new folder: nlink %d, want 2", prev.Nlink)
	}
	// step runs op and wants d's mtime and ctime later than before, and
	// nlink as given.
	step := func(what string, nlink uint64, op func() error) {
		t.Helper()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		st := stat(t, d)
		if !ts(st.Mtim).After(ts(prev.Mtim)) || !ts(st.Ctim).After(ts(prev.Ctim)) {
			t.Errorf("%s: folder mtime %v → %v, ctime %v → %v; want both later", what,
				ts(prev.Mtim), ts(st.Mtim), ts(prev.Ctim), ts(st.Ctim))
		}
		if st.Nlink != nlink {
			t.Errorf("%s: folder nlink %d, want %d", what, st.Nlink, nlink)
		}
		if st.Atim != st.Mtim {
			t.Errorf("%s: atime %v, want the mtime %v", what, ts(st.Atim), ts(st.Mtim))
		}
		prev = st
	}
	f := filepath.Join(d, "f")
	step("create", 2, func() error { return os.WriteFile(f, []byte("one"), 0o644) })
	step("mkdir", 3, func() error { return syscall.Mkdir(filepath.Join(d, "sub"), 0o755) })
	step("mkdir 2", 4, func() error { return syscall.Mkdir(filepath.Join(d, "sub2"), 0o755) })
	step("rename in", 4, func() error { return syscall.Rename(f, filepath.Join(d, "g")) })
	step("rmdir", 3, func() error { return syscall.Rmdir(filepath.Join(d, "sub2")) })
	step("unlink", 3, func() error { return syscall.Unlink(filepath.Join(d, "g")) })
	step("move a folder out", 2, func() error { return syscall.Rename(filepath.Join(d, "sub"), filepath.Join(other, "sub")) })
	if st := stat(t, other); st.Nlink != 3 {
		t.Errorf("folder moved in: nlink %d, want 3", st.Nlink)
	}

	// chmod of the folder: ctime moves, mtime does not.
	if err := syscall.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if st := stat(t, d); st.Mtim != prev.Mtim || !ts(st.Ctim).After(ts(prev.Ctim)) {
		t.Errorf("chmod folder: mtime %v → %v, ctime %v → %v", ts(prev.Mtim), ts(st.Mtim), ts(prev.Ctim), ts(st.Ctim))
	}

	// A file: chmod and rename move the ctime only; a write moves both.
	p := filepath.Join(e.mnt, "file")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fprev := stat(t, p)
	fstep := func(what string, mtimeMoves bool, op func() error) {
		t.Helper()
		if err := op(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		st := stat(t, p)
		if !ts(st.Ctim).After(ts(fprev.Ctim)) {
			t.Errorf("%s: file ctime %v → %v, want later", what, ts(fprev.Ctim), ts(st.Ctim))
		}
		if moved := st.Mtim != fprev.Mtim; moved != mtimeMoves {
			t.Errorf("%s: file mtime %v → %v, want moved=%v", what, ts(fprev.Mtim), ts(st.Mtim), mtimeMoves)
		}
		if ts(st.Ctim).Before(ts(st.Mtim)) {
			t.Errorf("%s: ctime %v before mtime %v", what, ts(st.Ctim), ts(st.Mtim))
		}
		fprev = st
	}
	fstep("chmod", false, func() error { return syscall.Chmod(p, 0o600) })
	fstep("rename", false, func() error {
		np := filepath.Join(e.mnt, "file2")
		err := syscall.Rename(p, np)
		p = np
		return err
	})
	fstep("write", true, func() error {
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		fh.WriteString("more")
		return fh.Close()
	})

	if st := stat(t, filepath.Join(e.mnt, "x")); st.Nlink != 4 {
		t.Errorf("folder made on the server with 2 subfolders: nlink %d, want 4", st.Nlink)
	}
}
