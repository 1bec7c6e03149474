package mount_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/mount"
	"netdisk/testutil"
)

// env is a real daemon with a user and our filesystem mounted for them.
type env struct {
	t     *testing.T
	d     *testutil.Daemon
	c     *client.Client
	be    *mount.HTTPBackend
	cache *mount.ChunkCache
	mnt   string
	srv   *fuse.Server
	fsys  *mount.FS
	root  gofs.InodeEmbedder // the mount's root folder node
}

const testChunk = 64 << 10

func setup(t *testing.T, opts ...func(*mount.Options)) *env {
	t.Helper()
	return setupDaemon(t, nil, opts...)
}

// setupDaemon is setup with more flags for the daemon.
func setupDaemon(t *testing.T, flags []string, opts ...func(*mount.Options)) *env {
	t.Helper()
	testutil.RequireTool(t, "fusermount3")
	d := testutil.StartDaemon(t, append([]string{"--chunk-size", "64KiB"}, flags...)...)
	ctx := context.Background()
	admin := client.New(d.URL, "admin", d.AdminPass)
	if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: "alice", Password: "alice-pass"}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, d: d, c: client.New(d.URL, "alice", "alice-pass")}
	e.mount(opts...)
	return e
}

func (e *env) mount(opts ...func(*mount.Options)) {
	t := e.t
	e.be = mount.NewHTTPBackend(e.c)
	var err error
	if e.cache == nil {
		if e.cache, err = mount.OpenChunkCache(filepath.Join(t.TempDir(), "cache"), 64<<20); err != nil {
			t.Fatal(err)
		}
	}
	o := mount.Options{Backend: e.be, Cache: e.cache, StageDir: t.TempDir(), TTL: 200 * time.Millisecond,
		OpTimeout: 5 * time.Second, UploadTimeout: 30 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	fsys, err := mount.New(o)
	if err != nil {
		t.Fatal(err)
	}
	e.mnt, e.fsys = t.TempDir(), fsys
	if e.srv, e.root, err = mount.MountKeepRoot(e.mnt, fsys, "netdisk-test"); err != nil {
		t.Fatal(err)
	}
	srv := e.srv
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			exec.Command("fusermount3", "-u", "-z", e.mnt).Run()
		}
		fsys.Close()
	})
}

func (e *env) sh(script string) string {
	e.t.Helper()
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "M="+e.mnt, "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.t.Fatalf("%s\n%v\n%s", script, err, out)
	}
	return string(out)
}

// makeTree writes a small source tree with files below, at and across the
// chunk size, an empty file and nested directories.
func makeTree(t *testing.T, dir string) {
	t.Helper()
	files := map[string]int{
		"a.txt": 10, "empty": 0, "sub/b.bin": testChunk, "sub/c.bin": 3*testChunk + 17,
		"sub/deep/er/d.bin": 200_000, "sub/deep/e.txt": 1,
	}
	for name, size := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, testutil.RandBytes(size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(dir, "emptydir"), 0o755)
	old := time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
	os.Chtimes(filepath.Join(dir, "sub", "c.bin"), old, old)
}

// sameTree compares two trees byte for byte (and the mtimes of files when
// withTimes).
func sameTree(t *testing.T, a, b string, withTimes bool) {
	t.Helper()
	list := func(root string) map[string]fs.FileInfo {
		m := map[string]fs.FileInfo{}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatalf("walk %s: %v", p, err)
			}
			rel, _ := filepath.Rel(root, p)
			info, _ := d.Info()
			m[rel] = info
			return nil
		})
		return m
	}
	ma, mb := list(a), list(b)
	for rel, ia := range ma {
		ib, ok := mb[rel]
		if !ok {
			t.Errorf("%s missing in %s", rel, b)
			continue
		}
		if ia.IsDir() != ib.IsDir() {
			t.Errorf("%s: dir %v vs %v", rel, ia.IsDir(), ib.IsDir())
			continue
		}
		if ia.IsDir() {
			continue
		}
		ba, _ := os.ReadFile(filepath.Join(a, rel))
		bb, err := os.ReadFile(filepath.Join(b, rel))
		if err != nil || !bytes.Equal(ba, bb) {
			t.Errorf("%s differs (%d vs %d bytes, %v)", rel, len(ba), len(bb), err)
		}
		if withTimes && !ia.ModTime().Equal(ib.ModTime()) {
			t.Errorf("%s: mtime %v vs %v", rel, ia.ModTime(), ib.ModTime())
		}
	}
	for rel := range mb {
		if _, ok := ma[rel]; !ok {
			t.Errorf("%s extra in %s", rel, b)
		}
	}
}

func TestCopyInOutAndTools(t *testing.T) {
	e := setup(t)
	src := t.TempDir()
	makeTree(t, src)
	out := t.TempDir()

	e.sh(`mkdir -p "$M/x/y/z" && test -d "$M/x/y/z"`)
	e.sh(`cp -r ` + src + ` "$M/x/src"`)
	sameTree(t, src, filepath.Join(e.mnt, "x", "src"), false)
	e.sh(`cp -r "$M/x/src" ` + out + `/back`)
	sameTree(t, src, filepath.Join(out, "back"), false)

	// rsync -a keeps mtimes in both directions.
	testutil.RequireTool(t, "rsync")
	e.sh(`rsync -a ` + src + `/ "$M/rs/"`)
	sameTree(t, src, filepath.Join(e.mnt, "rs"), true)
	e.sh(`rsync -a "$M/rs/" ` + out + `/rs/`)
	sameTree(t, src, filepath.Join(out, "rs"), true)

	// tar in and out.
	e.sh(`cd ` + src + ` && tar cf - . | (mkdir -p "$M/tar" && cd "$M/tar" && tar xf -)`)
	// tar keeps whole seconds only: compare bytes, and the one file whose
	// mtime is a whole second.
	sameTree(t, src, filepath.Join(e.mnt, "tar"), false)
	if st, err := os.Stat(filepath.Join(e.mnt, "tar", "sub", "c.bin")); err != nil || st.ModTime().UTC() != time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC) {
		t.Fatalf("tar x into the mount: mtime %v, %v", st.ModTime(), err)
	}
	e.sh(`mkdir ` + out + `/untar && cd "$M/tar" && tar cf - . | (cd ` + out + `/untar && tar xf -)`)
	sameTree(t, src, filepath.Join(out, "untar"), false)

	// mv, cat, find, du, ls -la, rm -r.
	e.sh(`mv "$M/x/src/a.txt" "$M/x/moved.txt" && test ! -e "$M/x/src/a.txt"`)
	if got := e.sh(`cat "$M/x/moved.txt"`); got != string(mustRead(t, filepath.Join(src, "a.txt"))) {
		t.Fatalf("cat after mv: %q", got)
	}
	e.sh(`mv "$M/x/src" "$M/x/renamed" && test -d "$M/x/renamed/sub/deep/er"`)
	if n := strings.Count(e.sh(`find "$M/rs" -type f`), "\n"); n != 6 {
		t.Fatalf("find found %d files, want 6", n)
	}
	if got := e.sh(`du -sb "$M/rs" | cut -f1`); got == "0\n" {
		t.Fatalf("du says 0")
	}
	ls := e.sh(`ls -la "$M/rs/sub"`)
	if !strings.Contains(ls, fmt.Sprint(3*testChunk+17)) || !strings.Contains(ls, "c.bin") {
		t.Fatalf("ls -la:\n%s", ls)
	}
	e.sh(`rm -r "$M/x" && test ! -e "$M/x"`)
	e.sh(`df "$M"`)

	// The server sees what the mount wrote.
	ent, err := e.be.Stat(context.Background(), "/rs/sub/c.bin")
	if err != nil || ent.Size != 3*testChunk+17 {
		t.Fatalf("server stat: %+v %v", ent, err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Editors write a temp file and rename it over the original.
func TestEditorSaveAndAttributes(t *testing.T) {
	e := setup(t)
	p := filepath.Join(e.mnt, "doc.txt")
	if err := os.WriteFile(p, []byte("version 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(e.mnt, ".doc.txt.swp")
	f, err := os.Create(tmp)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("version 2, longer\n")
	if err := f.Sync(); err != nil {
		t.Fatalf("fsync: %v", err)
	}
	// fsync returned: the server has it.
	ent, err := e.be.Stat(context.Background(), "/.doc.txt.swp")
	if err != nil || ent.Size != int64(len("version 2, longer\n")) {
		t.Fatalf("after fsync the server has %+v, %v", ent, err)
	}
	f.Close()
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, p)); got != "version 2, longer\n" {
		t.Fatalf("after rename: %q", got)
	}
	st, err := os.Stat(p)
	if err != nil || st.Size() != int64(len("version 2, longer\n")) {
		t.Fatalf("stat after rename: %v %v", st, err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("temp file still there: %v", err)
	}
	// Append and truncate keep sizes right at once.
	af, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	af.WriteString("more\n")
	af.Close()
	if st, _ := os.Stat(p); st.Size() != int64(len("version 2, longer\nmore\n")) {
		t.Fatalf("size after append: %d", st.Size())
	}
	if err := os.Truncate(p, 4); err != nil {
		t.Fatal(err)
	}
	if got := string(mustRead(t, p)); got != "vers" {
		t.Fatalf("after truncate: %q", got)
	}
	mt := time.Date(2021, 1, 2, 3, 4, 5, 600, time.UTC)
	if err := os.Chtimes(p, mt, mt); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(p); !st.ModTime().Equal(mt) {
		t.Fatalf("mtime %v, want %v", st.ModTime(), mt)
	}
}

// tail -f of a file written through the mount sees each appended line.
func TestTailFollow(t *testing.T) {
	e := setup(t)
	p := filepath.Join(e.mnt, "log.txt")
	os.WriteFile(p, []byte("line 0\n"), 0o644)
	tail := exec.Command("tail", "-n", "+1", "-f", "-s", "0.1", p)
	out := &testutil.SyncBuffer{}
	tail.Stdout = out
	if err := tail.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tail.Process.Kill(); tail.Wait() })
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	for i := 1; i <= 3; i++ {
		fmt.Fprintf(f, "line %d\n", i)
		f.Sync()
	}
	f.Close()
	want := "line 0\nline 1\nline 2\nline 3\n"
	deadline := time.Now().Add(10 * time.Second)
	for out.String() != want {
		if time.Now().After(deadline) {
			t.Fatalf("tail -f shows %q, want %q", out.String(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metric reads one counter of the daemon's /metrics, summed over labels.
func metric(t *testing.T, d *testutil.Daemon, name string) float64 {
	resp, err := d.Do(context.Background(), "GET", "/metrics", "admin", d.AdminPass, nil, nil) // admins only
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, name) {
			var v float64
			fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v)
			sum += v
		}
	}
	return sum
}

func mkTestDir(mnt, name string) (string, error) {
	d := filepath.Join(mnt, name)
	return d, os.Mkdir(d, 0o755)
}

type optsT = mount.Options

func errorsIs(err error, target error) bool { return errors.Is(err, target) }
