package mount_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/chunker"
	"netdisk/client"
	"netdisk/mount"
	"netdisk/testutil"
)

// gatedBackend is the real HTTP backend whose uploads wait until the test
// opens the gate: it holds files in the write-back queue for as long as a
// test needs to look at them there.
type gatedBackend struct {
	*mount.HTTPBackend
	mu   sync.Mutex
	gate chan struct{}
}

func (g *gatedBackend) Upload(ctx context.Context, r io.ReaderAt, size int64, sums []chunker.Sum, p string, a mount.Attrs) (mount.Entry, error) {
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	select {
	case <-gate:
	case <-ctx.Done():
		return mount.Entry{}, ctx.Err()
	}
	return g.HTTPBackend.Upload(ctx, r, size, sums, p, a)
}

func (g *gatedBackend) open() {
	g.mu.Lock()
	close(g.gate)
	g.mu.Unlock()
}

func (e *env) serverHas(p string) bool {
	_, err := e.c.Stat(context.Background(), p)
	return err == nil
}
func (e *env) syncAll(t *testing.T) { t.Helper(); mustNil(t, e.fsys.Sync(context.Background())) }
func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// setupWriteBack mounts with write-back, uploads held at a gate, and a clock
// the test moves past the TTLs.
func setupWriteBack(t *testing.T) (*env, *gatedBackend, *testutil.Clock) {
	clk := testutil.NewClock(time.Now())
	var g *gatedBackend
	e := setup(t, func(o *mount.Options) {
		g = &gatedBackend{HTTPBackend: o.Backend.(*mount.HTTPBackend), gate: make(chan struct{})}
		o.Backend, o.WriteBack, o.Now = g, true, clk.Now
	})
	t.Cleanup(g.openOnce)
	return e, g, clk
}

func (g *gatedBackend) openOnce() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.gate:
	default:
		close(g.gate)
	}
}

// TestWriteBackCloseToOpen: close returns while the server has nothing yet,
// and this mount shows the new file and its content meanwhile — by name,
// in listings and after every TTL — until the upload lands and the server
// holds the same bytes.
func TestWriteBackCloseToOpen(t *testing.T) {
	e, g, clk := setupWriteBack(t)
	data := testutil.RandBytes(3*testChunk + 5)
	small := []byte("small file\n")
	mustNil(t, os.WriteFile(filepath.Join(e.mnt, "big.bin"), data, 0o644))
	mustNil(t, os.WriteFile(filepath.Join(e.mnt, "small.txt"), small, 0o600))
	if e.serverHas("/big.bin") || e.serverHas("/small.txt") {
		t.Fatal("the server has a file whose upload is held at the gate: close waited for it")
	}
	for round := 0; round < 2; round++ {
		clk.Advance(time.Hour) // every name, attribute and listing is stale now
		if got := mustRead(t, filepath.Join(e.mnt, "big.bin")); !bytes.Equal(got, data) {
			t.Fatalf("round %d: read back %d bytes, want the %d written", round, len(got), len(data))
		}
		fi, err := os.Stat(filepath.Join(e.mnt, "small.txt"))
		mustNil(t, err)
		if fi.Size() != int64(len(small)) || fi.Mode().Perm() != 0o600 {
			t.Fatalf("round %d: small.txt shows size %d mode %v", round, fi.Size(), fi.Mode().Perm())
		}
		names, err := os.ReadDir(e.mnt)
		mustNil(t, err)
		if len(names) != 2 || names[0].Name() != "big.bin" || names[1].Name() != "small.txt" {
			t.Fatalf("round %d: the mount lists %v", round, names)
		}
	}
	g.open()
	e.syncAll(t)
	serverHolds(t, e, "/big.bin", "alice", "alice-pass", data)
	serverHolds(t, e, "/small.txt", "alice", "alice-pass", small)
	if n, err := e.c.Stat(context.Background(), "/small.txt"); err != nil || n.Mode&0o777 != 0o600 {
		t.Fatalf("small.txt on the server: mode %o, %v (the create's mode is stored with the upload)", n.Mode, err)
	}
	clk.Advance(time.Hour)
	if got := mustRead(t, filepath.Join(e.mnt, "big.bin")); !bytes.Equal(got, data) {
		t.Fatal("after the upload the mount reads other bytes")
	}
}

// TestWriteBackFsyncWaits: fsync returns only once the server has the
// content, with write-back as without.
func TestWriteBackFsyncWaits(t *testing.T) {
	e, g, _ := setupWriteBack(t)
	g.open()
	for i := 0; i < 5; i++ {
		data := testutil.RandBytes(testChunk*i + 100)
		name := fmt.Sprintf("f%d", i)
		f, err := os.Create(filepath.Join(e.mnt, name))
		mustNil(t, err)
		_, err = f.Write(data)
		mustNil(t, err)
		mustNil(t, f.Sync())
		// Before the close, and without waiting for the queue.
		serverHolds(t, e, "/"+name, "alice", "alice-pass", data)
		mustNil(t, f.Close())
	}
}

// TestWriteBackNamesWaitForData: removing, renaming and replacing files and
// folders whose uploads are queued leaves the server with exactly what a
// mount without write-back would: removed files never appear, renamed ones
// appear under the new name only, with their content, and a folder holding
// queued files is not empty.
func TestWriteBackNamesWaitForData(t *testing.T) {
	e, g, _ := setupWriteBack(t)
	m := e.mnt
	want := map[string][]byte{}
	// These take the upload workers, held at the gate: what is queued
	// after them stays in the queue until the gate opens.
	for i := 0; i < 4; i++ {
		p := fmt.Sprintf("/held%d", i)
		want[p] = []byte(p)
		mustNil(t, os.WriteFile(m+p, want[p], 0o644))
	}
	mustNil(t, os.Mkdir(filepath.Join(m, "d"), 0o755))
	mustNil(t, os.WriteFile(filepath.Join(m, "gone"), []byte("x"), 0o644))
	mustNil(t, os.Remove(filepath.Join(m, "gone")))
	mustNil(t, os.WriteFile(filepath.Join(m, "d", "queued"), []byte("q"), 0o644))
	if err := os.Remove(filepath.Join(m, "d")); !errors.Is(err, syscall.ENOTEMPTY) {
		t.Fatalf("rmdir of a folder holding a queued file: %v, want ENOTEMPTY", err)
	}
	if _, err := os.Stat(filepath.Join(m, "gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a removed queued file still shows: %v", err)
	}
	g.open()
	for i := 0; i < 20; i++ {
		b := testutil.RandBytes(100 + i*testChunk/4)
		p := fmt.Sprintf("d/sub/f%02d", i)
		if i == 0 {
			mustNil(t, os.Mkdir(filepath.Join(m, "d", "sub"), 0o755))
		}
		mustNil(t, os.WriteFile(filepath.Join(m, p), b, 0o644))
		want["/moved/sub/"+fmt.Sprintf("f%02d", i)] = b
	}
	mustNil(t, os.WriteFile(filepath.Join(m, "d", "a"), []byte("aaa"), 0o644))
	mustNil(t, os.Rename(filepath.Join(m, "d", "a"), filepath.Join(m, "d", "b")))
	want["/moved/b"] = []byte("aaa")
	want["/moved/queued"] = []byte("q")
	mustNil(t, os.WriteFile(filepath.Join(m, "old"), []byte("old content"), 0o644))
	mustNil(t, os.WriteFile(filepath.Join(m, "new"), []byte("new content"), 0o644))
	mustNil(t, os.Rename(filepath.Join(m, "new"), filepath.Join(m, "old")))
	want["/old"] = []byte("new content")
	mustNil(t, os.Rename(filepath.Join(m, "d"), filepath.Join(m, "moved")))
	e.syncAll(t)
	for p, b := range want {
		serverHolds(t, e, p, "alice", "alice-pass", b)
	}
	for _, p := range []string{"/gone", "/d", "/new", "/moved/a"} {
		if e.serverHas(p) {
			t.Errorf("the server has %s", p)
		}
	}
}

// TestWriteBackUnmountUploads: what is queued when the mount ends is
// uploaded before FS.Close returns.
func TestWriteBackUnmountUploads(t *testing.T) {
	e, g, _ := setupWriteBack(t)
	want := map[string][]byte{}
	for i := 0; i < 30; i++ {
		b := testutil.RandBytes(50 + i)
		p := fmt.Sprintf("/u%02d", i)
		mustNil(t, os.WriteFile(e.mnt+p, b, 0o644))
		want[p] = b
	}
	mustNil(t, e.srv.Unmount())
	g.open()
	e.fsys.Close()
	for p, b := range want {
		serverHolds(t, e, p, "alice", "alice-pass", b)
	}
}

// TestWriteBackErrorAtFsync: with write-back an upload the server refuses
// (over quota) does not fail the close, but the data is not lost: it stays
// readable through the mount, and fsync reports the refusal (EDQUOT), as
// often as it is asked, until the file fits.
func TestWriteBackErrorAtFsync(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	admin := client.New(e.d.URL, "admin", e.d.AdminPass)
	if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: "dave", Password: "dave-pass", Quota: 10 * testChunk}); err != nil {
		t.Fatal(err)
	}
	e.c = client.New(e.d.URL, "dave", "dave-pass")
	e.mount(func(o *mount.Options) { o.WriteBack = true })
	p := filepath.Join(e.mnt, "big.bin")
	data := testutil.RandBytes(12 * testChunk)
	mustNil(t, os.WriteFile(p, data, 0o644)) // close does not wait for the refusal
	e.syncAll(t)                             // the background upload has been refused
	if got := mustRead(t, p); !bytes.Equal(got, data) {
		t.Fatal("the refused file does not read back through the mount")
	}
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	mustNil(t, err)
	defer f.Close()
	for i := 0; i < 2; i++ {
		if err := f.Sync(); !errors.Is(err, syscall.EDQUOT) {
			t.Fatalf("fsync %d of a file over quota: %v, want EDQUOT", i, err)
		}
	}
	mustNil(t, f.Truncate(5*testChunk)) // now it fits
	mustNil(t, f.Sync())
	serverHolds(t, e, "/big.bin", "dave", "dave-pass", data[:5*testChunk])
}

// TestWriteBackRecovery: files a mount closed with write-back but never
// uploaded (its process died: here its uploads hang and its staging
// folder's lock is let go, as at a kill -9) are uploaded by the next mount
// of the same cache folder — to their path, or beside a version changed
// elsewhere since — while a file removed before the crash stays removed and
// a live mount's staging folder is left alone.
func TestWriteBackRecovery(t *testing.T) {
	cacheDir := t.TempDir()
	dead, err := mount.OpenStaging(cacheDir)
	mustNil(t, err)
	live, err := mount.OpenStaging(cacheDir)
	mustNil(t, err)
	defer live.Close(slog.Default())
	mustNil(t, os.WriteFile(filepath.Join(live.Dir, "stage-1.wb"), []byte(`{"path":"/live"}`), 0o600))
	mustNil(t, os.WriteFile(filepath.Join(live.Dir, "stage-1"), []byte("live"), 0o600))

	clk := testutil.NewClock(time.Now())
	var g *gatedBackend
	e := setup(t, func(o *mount.Options) {
		g = &gatedBackend{HTTPBackend: o.Backend.(*mount.HTTPBackend), gate: make(chan struct{})}
		o.Backend, o.WriteBack, o.Now, o.StageDir, o.UploadTimeout = g, true, clk.Now, dead.Dir, 3*time.Second
	})
	ctx := context.Background()
	// /old is on the server before; /changed gets a newer version from
	// elsewhere after the mount wrote it.
	for _, p := range []string{"/old", "/changed"} {
		if _, err := e.c.Upload(ctx, p, bytes.NewReader([]byte("server "+p)), int64(len("server "+p))); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(time.Hour) // the mount sees the server's files
	fresh, old, changed := testutil.RandBytes(3*testChunk+1), []byte("new old"), []byte("ours")
	mustNil(t, os.WriteFile(filepath.Join(e.mnt, "fresh"), fresh, 0o640))
	mustNil(t, os.WriteFile(filepath.Join(e.mnt, "old"), old, 0o644))
	mustNil(t, os.WriteFile(filepath.Join(e.mnt, "changed"), changed, 0o644))
	mustNil(t, os.WriteFile(filepath.Join(e.mnt, "removed"), []byte("x"), 0o644))
	mustNil(t, os.Remove(filepath.Join(e.mnt, "removed")))
	time.Sleep(10 * time.Millisecond) // mtime resolution: the server's version must be newer
	if _, err := e.c.Upload(ctx, "/changed", bytes.NewReader([]byte("theirs")), 6); err != nil {
		t.Fatal(err)
	}
	// The mount dies: no upload ever leaves it, its lock is let go.
	mustNil(t, exec.Command("fusermount3", "-u", "-z", e.mnt).Run())
	dead.Abandon()

	next, err := mount.OpenStaging(cacheDir)
	mustNil(t, err)
	defer next.Close(slog.Default())
	n, err := next.Recover(ctx, mount.NewHTTPBackend(e.c), slog.Default())
	mustNil(t, err)
	if n != 3 {
		t.Fatalf("recovered %d files, want 3", n)
	}
	serverHolds(t, e, "/fresh", "alice", "alice-pass", fresh)
	serverHolds(t, e, "/old", "alice", "alice-pass", old)
	serverHolds(t, e, "/changed", "alice", "alice-pass", []byte("theirs"))
	ls, err := e.c.List(ctx, "/")
	mustNil(t, err)
	var names []string
	for _, x := range ls {
		names = append(names, x.Name)
		if strings.HasPrefix(x.Name, "changed.recovered-") {
			serverHolds(t, e, "/"+x.Name, "alice", "alice-pass", changed)
		}
	}
	if len(names) != 4 || e.serverHas("/removed") || e.serverHas("/live") {
		t.Fatalf("the server lists %v; want changed, its recovered copy, fresh and old", names)
	}
	if st, err := e.c.Stat(ctx, "/fresh"); err != nil || st.Mode&0o777 != 0o640 {
		t.Fatalf("/fresh mode %o (%v), want the 0640 it was created with", st.Mode, err)
	}
	if _, err := os.Stat(dead.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the dead mount's staging folder is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(live.Dir, "stage-1.wb")); err != nil {
		t.Fatalf("a live mount's staging folder was touched: %v", err)
	}
}
