package mount_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"netdisk/testutil"
)

// permOf is what a copy that keeps permissions must keep: the permission
// bits and setuid/setgid/sticky.
func permOf(fi fs.FileInfo) fs.FileMode {
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// modeTree writes a tree whose files and directories have assorted modes
// (set after creation, so the umask plays no part).
func modeTree(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	files := map[string]fs.FileMode{
		"run.sh": 0o755, "secret": 0o600, "group.txt": 0o640, "ro": 0o400,
		"suid": 0o755 | fs.ModeSetuid, "d700/in": 0o644, "d750/deep/x": 0o711,
		"sgid/y": 0o664, "big": 0o750,
	}
	dirs := map[string]fs.FileMode{
		"d700": 0o700, "d750": 0o750, "d750/deep": 0o755, "sgid": fs.ModeSetgid | 0o755, "sticky": fs.ModeSticky | 0o777,
	}
	for name := range dirs {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, m := range files {
		p := filepath.Join(dir, name)
		size := 10
		if name == "big" {
			size = 2*testChunk + 5 // goes through the chunked upload
		}
		if err := os.WriteFile(p, testutil.RandBytes(size), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]fs.FileMode{}
	for name, m := range dirs {
		if err := os.Chmod(filepath.Join(dir, name), m); err != nil {
			t.Fatal(err)
		}
		want[name] = m
	}
	for name, m := range files {
		want[name] = m
	}
	for name, m := range want {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || permOf(fi) != m {
			t.Fatalf("source %s: %v, want %v (%v)", name, permOf(fi), m, err)
		}
	}
	return want
}

// sameModes checks every entry of want under root has the wanted mode.
func sameModes(t *testing.T, root string, want map[string]fs.FileMode) {
	t.Helper()
	for name, m := range want {
		fi, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := permOf(fi); got != m {
			t.Errorf("%s under %s: mode %v, want %v", name, root, got, m)
		}
	}
}

// TestModesKept: chmod, cp -p, rsync -a and tar x keep permission bits
// through the mount, the server stores them (another mount sees them), and a
// new version of a file keeps its mode.
func TestModesKept(t *testing.T) {
	testutil.RequireTool(t, "rsync")
	e := setup(t)
	ctx := context.Background()
	src := t.TempDir()
	want := modeTree(t, src)
	out := t.TempDir()

	e.sh(`cp -rp ` + src + ` "$M/cp"`)
	sameModes(t, filepath.Join(e.mnt, "cp"), want)
	e.sh(`rsync -a ` + src + `/ "$M/rs/"`)
	sameModes(t, filepath.Join(e.mnt, "rs"), want)
	e.sh(`cd ` + src + ` && tar cf - . | (mkdir "$M/tar" && cd "$M/tar" && tar xpf -)`)
	sameModes(t, filepath.Join(e.mnt, "tar"), want)
	sameTree(t, src, filepath.Join(e.mnt, "tar"), false)

	// And out again: the mount reports what it stored.
	e.sh(`cp -rp "$M/rs" ` + out + `/cp && rsync -a "$M/cp/" ` + out + `/rs/`)
	sameModes(t, filepath.Join(out, "cp"), want)
	sameModes(t, filepath.Join(out, "rs"), want)

	// The server holds the bits (not only this mount's memory).
	for name, m := range want {
		n, err := e.c.Stat(ctx, "/rs/"+name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fs.FileMode(n.Mode & 0o777); got != m.Perm() {
			t.Errorf("server: /rs/%s mode %o, want %o", name, n.Mode, m.Perm())
		}
	}
	if n, _ := e.c.Stat(ctx, "/rs/suid"); n.Mode != 0o4755 {
		t.Errorf("server: setuid file stored as %o, want 4755", n.Mode)
	}
	if n, _ := e.c.Stat(ctx, "/rs/sticky"); n.Mode != 0o1777 {
		t.Errorf("server: sticky directory stored as %o, want 1777", n.Mode)
	}

	// chmod, including 000, and mkdir -m; umask applies to creation.
	f := filepath.Join(e.mnt, "f")
	e.sh(`echo one > "$M/f" && chmod 640 "$M/f" && mkdir -m 700 "$M/priv" && (umask 077 && touch "$M/u" && mkdir "$M/ud")`)
	sameModes(t, e.mnt, map[string]fs.FileMode{"f": 0o640, "priv": 0o700, "u": 0o600, "ud": 0o700})
	if err := os.Chmod(f, 0); err != nil {
		t.Fatal(err)
	}
	sameModes(t, e.mnt, map[string]fs.FileMode{"f": 0})
	if n, _ := e.c.Stat(ctx, "/f"); n.Mode != 0 {
		t.Errorf("server: chmod 000 stored as %o", n.Mode)
	}
	if err := os.Chmod(f, 0o600); err != nil {
		t.Fatal(err)
	}

	// Overwrites keep the mode: through the mount, and through the upload
	// API (which carries none).
	e.sh(`echo two > "$M/f"`)
	sameModes(t, e.mnt, map[string]fs.FileMode{"f": 0o600})
	if _, err := e.c.Upload(ctx, "/f", strings.NewReader("three\n"), 6); err != nil {
		t.Fatal(err)
	}
	if n, err := e.c.Stat(ctx, "/f"); err != nil || n.Mode != 0o600 || n.Size != 6 {
		t.Fatalf("after an upload over it: %+v %v", n, err)
	}

	// fchmod of a file with staged, unsent data is stored with the upload.
	h, err := os.OpenFile(filepath.Join(e.mnt, "g"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Write(testutil.RandBytes(3*testChunk + 1)); err != nil {
		t.Fatal(err)
	}
	if err := h.Chmod(0o705); err != nil {
		t.Fatal(err)
	}
	if fi, err := h.Stat(); err != nil || permOf(fi) != 0o705 {
		t.Fatalf("fstat after fchmod: %v %v", fi.Mode(), err)
	}
	if _, err := h.Write([]byte("more")); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := e.c.Stat(ctx, "/g"); err != nil || n.Mode != 0o705 || n.Size != 3*testChunk+5 {
		t.Fatalf("server after close: %+v %v", n, err)
	}

	// A second mount (fresh caches) sees the stored bits.
	e2 := *e
	e2.cache = nil
	e2.mount()
	sameModes(t, filepath.Join(e2.mnt, "cp"), want)
	sameModes(t, e2.mnt, map[string]fs.FileMode{"f": 0o600, "g": 0o705, "priv": 0o700})
}
