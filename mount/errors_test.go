package mount_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"netdisk/mount"
	"netdisk/testutil"
)

// TestNameErrors: names the drive cannot hold fail with the errno a local
// filesystem gives (real syscalls through the mount), not EINVAL or EIO.
func TestNameErrors(t *testing.T) {
	logs := &testutil.SyncBuffer{}
	e := setup(t, func(o *mount.Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	p := func(name string) string { return filepath.Join(e.mnt, name) }
	create := func(name string) error {
		fd, err := syscall.Open(p(name), syscall.O_CREAT|syscall.O_WRONLY, 0o644)
		if err == nil {
			syscall.Close(fd)
		}
		return err
	}
	if err := create("src"); err != nil {
		t.Fatal(err)
	}
	want := func(op string, err error, en syscall.Errno) {
		t.Helper()
		if !errors.Is(err, en) {
			t.Errorf("%s: %v, want %v", op, err, en)
		}
	}

	// 255 bytes is the limit (NAME_MAX): it works, 256 does not.
	ok := strings.Repeat("a", 255)
	if err := create(ok); err != nil {
		t.Fatalf("create a 255-byte name: %v", err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(p(ok), &st); err != nil {
		t.Fatalf("stat a 255-byte name: %v", err)
	}
	long := strings.Repeat("b", 256)
	want("create 256 bytes", create(long), syscall.ENAMETOOLONG)
	want("mkdir 256 bytes", syscall.Mkdir(p(long), 0o755), syscall.ENAMETOOLONG)
	want("rename to 256 bytes", syscall.Rename(p("src"), p(long)), syscall.ENAMETOOLONG)
	want("stat 256 bytes", syscall.Stat(p(long), &st), syscall.ENAMETOOLONG)
	long1000 := strings.Repeat("c", 1000)
	want("create 1000 bytes", create(long1000), syscall.ENAMETOOLONG)

	// Not UTF-8: EILSEQ and one log line per refusal; a lookup finds nothing.
	bad := "caf\xe9.txt" // Latin-1
	want("stat non-UTF-8", syscall.Stat(p(bad), &st), syscall.ENOENT)
	if n := strings.Count(logs.String(), "not UTF-8"); n != 0 {
		t.Errorf("a lookup logged %d lines", n)
	}
	want("create non-UTF-8", create(bad), syscall.EILSEQ)
	if n := strings.Count(logs.String(), "not UTF-8"); n != 1 {
		t.Errorf("a refused create logged %d lines, want 1:\n%s", n, logs.String())
	}
	want("mkdir non-UTF-8", syscall.Mkdir(p(bad), 0o755), syscall.EILSEQ)
	want("rename to non-UTF-8", syscall.Rename(p("src"), p(bad)), syscall.EILSEQ)
	if n := strings.Count(logs.String(), "not UTF-8"); n != 3 {
		t.Errorf("3 refusals logged %d lines:\n%s", n, logs.String())
	}
	// Nothing of it reached the drive; the source is still there.
	if err := syscall.Stat(p("src"), &st); err != nil {
		t.Fatalf("src after refused renames: %v", err)
	}
}

// TestServerDownOffline: with the server stopped the mount notices the loss
// once (one log line) and from then on answers at once: stat, ls, reads and
// df from what it saw last (cached attributes, listings, chunk lists and
// chunks, quota), anything else with EHOSTDOWN — never by waiting out the
// timeout on each call. Write-back keeps taking files. When the server is
// back on the same address (and the mount's clock says a look at it is
// due), one log line says so and the files kept go up.
func TestServerDownOffline(t *testing.T) {
	logs := &testutil.SyncBuffer{}
	clk := testutil.NewClock(time.Now())
	e := setup(t, func(o *mount.Options) {
		o.OpTimeout = 20 * time.Second // what every call used to wait
		o.Logger, o.Now, o.WriteBack = slog.New(slog.NewTextHandler(logs, nil)), clk.Now, true
		o.Backend.(*mount.HTTPBackend).RedialFor = 2 * time.Second
	})
	p := func(name string) string { return filepath.Join(e.mnt, name) }
	data := testutil.RandBytes(3*testChunk + 5)
	mustNil(t, os.Mkdir(p("d"), 0o755))
	mustNil(t, os.WriteFile(p("d/a"), data, 0o644))
	e.syncAll(t)
	// A folder the mount lists in its parent but never opened.
	_, err := e.c.MkdirMode(context.Background(), "/unseen", 0o755)
	mustNil(t, err)
	// Seen once: listing, attributes, content (its chunks cached), df.
	e.sh(`ls -l "$M/d" >/dev/null; cat "$M/d/a" >/dev/null; df "$M" >/dev/null`)

	e.d.Stop()
	clk.Advance(time.Hour) // every cached answer is past its TTL
	var st syscall.Stat_t
	// The first call finds out (after the redial), the rest know and take
	// well under a redial each.
	bound := 5 * time.Second
	quick := func(what string, f func() error) error {
		t.Helper()
		start := time.Now()
		err := f()
		if took := time.Since(start); took > bound {
			t.Errorf("%s with the server down took %v", what, took)
		}
		bound = time.Second
		return err
	}
	// What no listing seen answers is EHOSTDOWN.
	for i := range 4 {
		err := quick("stat in an unseen folder", func() error { return syscall.Stat(p(fmt.Sprintf("unseen/x%d", i)), &st) })
		if !errors.Is(err, syscall.EHOSTDOWN) {
			t.Fatalf("stat in a folder never listed, server down: %v, want EHOSTDOWN", err)
		}
	}
	if err := quick("stat a name the root lacks", func() error { return syscall.Stat(p("never"), &st) }); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("stat of a name the root's listing lacks: %v, want ENOENT", err)
	}
	if err := quick("stat a cached file", func() error { return syscall.Stat(p("d/a"), &st) }); err != nil || st.Size != int64(len(data)) {
		t.Fatalf("stat of a file seen: %v, size %d", err, st.Size)
	}
	var names []string
	mustNil(t, quick("ls", func() error {
		des, err := os.ReadDir(p("d"))
		for _, de := range des {
			names = append(names, de.Name())
		}
		return err
	}))
	if fmt.Sprint(names) != "[a]" {
		t.Errorf("ls of a folder seen lists %v, want [a]", names)
	}
	if err := quick("stat a name the listing lacks", func() error { return syscall.Stat(p("d/none"), &st) }); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("stat of a name the listing lacks: %v, want ENOENT", err)
	}
	var got []byte
	mustNil(t, quick("read a cached file", func() (err error) { got, err = os.ReadFile(p("d/a")); return err }))
	if !bytes.Equal(got, data) {
		t.Errorf("read of a cached file gives %d bytes, not its content", len(got))
	}
	var sfs syscall.Statfs_t
	mustNil(t, quick("df", func() error { return syscall.Statfs(e.mnt, &sfs) }))
	if err := quick("mkdir", func() error { return syscall.Mkdir(p("d/new"), 0o755) }); !errors.Is(err, syscall.EHOSTDOWN) {
		t.Errorf("mkdir with the server down: %v, want EHOSTDOWN", err)
	}
	// Write-back keeps writing locally.
	kept := testutil.RandBytes(2*testChunk + 1)
	mustNil(t, quick("write-back write", func() error { return os.WriteFile(p("d/kept"), kept, 0o644) }))
	mustNil(t, e.fsys.Sync(context.Background()))
	if got, err := os.ReadFile(p("d/kept")); err != nil || !bytes.Equal(got, kept) {
		t.Fatalf("the file written meanwhile reads back %d bytes, %v", len(got), err)
	}
	if n := strings.Count(logs.String(), "server unreachable"); n != 1 {
		t.Errorf("%d lines about the loss, want 1:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("errors logged while offline:\n%s", logs.String())
	}

	e.d.Restart()
	clk.Advance(time.Minute) // the next look at the server is due
	if err := syscall.Stat(p("unseen/back"), &st); !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("stat once the server is back: %v, want ENOENT", err)
	}
	if n := strings.Count(logs.String(), "server reachable again"); n != 1 {
		t.Errorf("%d lines about the server's return, want 1:\n%s", n, logs.String())
	}
	mustNil(t, e.fsys.Sync(context.Background()))
	serverHolds(t, e, "/d/kept", "alice", "alice-pass", kept)
	mustNil(t, syscall.Mkdir(p("d/new"), 0o755))
}

// TestServerRestartRidden: a call made while the server restarts (the
// mount did not know it lost) waits for it within its redial time and
// succeeds, instead of failing at once.
func TestServerRestartRidden(t *testing.T) {
	e := setup(t, func(o *mount.Options) {
		o.OpTimeout = time.Minute
		o.Backend.(*mount.HTTPBackend).RedialFor = time.Minute
	})
	if err := os.WriteFile(filepath.Join(e.mnt, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.d.Stop()
	done := make(chan error, 1)
	go func() {
		var st syscall.Stat_t
		done <- syscall.Stat(filepath.Join(e.mnt, "a-new-name"), &st)
	}()
	// It must still be waiting while the server is down (it used to
	// return ECONNREFUSED at once).
	select {
	case err := <-done:
		t.Fatalf("stat returned while the server is down: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
	e.d.Restart()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ENOENT) {
			t.Fatalf("stat across a server restart: %v, want the server's ENOENT", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("stat across a server restart did not return")
	}
}

// TestPathTooLong: a path the drive cannot hold, over vpath.MaxPathLen
// bytes (reachable through relative paths from a deep folder), gives
// ENAMETOOLONG to create, mkdir, rename and lookup, with and without
// write-back, before anything is staged or sent; and no log line of the
// mount quotes such a path whole.
func TestPathTooLong(t *testing.T) {
	for _, wb := range []bool{false, true} {
		t.Run(fmt.Sprintf("write-back=%v", wb), func(t *testing.T) {
			logs := &testutil.SyncBuffer{}
			stage := t.TempDir()
			e := setup(t, func(o *mount.Options) {
				o.Logger, o.WriteBack, o.StageDir = slog.New(slog.NewTextHandler(logs, nil)), wb, stage
			})
			root, err := syscall.Open(e.mnt, syscall.O_DIRECTORY|syscall.O_RDONLY, 0)
			mustNil(t, err)
			defer syscall.Close(root)
			fd, err := syscall.Dup(root)
			mustNil(t, err)
			// 16 folders of 255-byte names: "/name/name…" is 16 × 256 =
			// 4096 bytes, the longest path the drive holds.
			name := strings.Repeat("d", 255)
			for range 16 {
				mustNil(t, syscall.Mkdirat(fd, name, 0o755))
				next, err := syscall.Openat(fd, name, syscall.O_DIRECTORY|syscall.O_RDONLY, 0)
				mustNil(t, err)
				syscall.Close(fd)
				fd = next
			}
			defer syscall.Close(fd)
			fd2, err := syscall.Openat(root, "src", syscall.O_CREAT|syscall.O_WRONLY, 0o644)
			mustNil(t, err)
			syscall.Close(fd2)

			want := func(op string, err error) {
				t.Helper()
				if !errors.Is(err, syscall.ENAMETOOLONG) {
					t.Errorf("%s below a 4096-byte path: %v, want ENAMETOOLONG", op, err)
				}
			}
			_, err = syscall.Openat(fd, "f", syscall.O_CREAT|syscall.O_WRONLY, 0o644)
			want("create", err)
			want("mkdir", syscall.Mkdirat(fd, "g", 0o755))
			want("rename", syscall.Renameat(root, "src", fd, "f"))
			var st unix.Stat_t
			want("stat", unix.Fstatat(fd, "f", &st, 0))

			mustNil(t, e.fsys.Sync(context.Background()))
			if left, _ := filepath.Glob(filepath.Join(stage, "stage-*")); len(left) > 0 {
				t.Errorf("refused creates left staged files: %v", left)
			}
			if _, err := e.c.Stat(context.Background(), "/src"); err != nil {
				t.Errorf("the source of the refused rename: %v", err)
			}
			for _, line := range strings.Split(logs.String(), "\n") {
				if len(line) > 1024 {
					t.Errorf("a log line of %d bytes: %.200s…", len(line), line)
				}
			}
		})
	}
}

// TestRecoveryDropsPathsTooLong: a file an earlier mount queued for a path
// the drive cannot hold (as mounts did before refusing such paths) is
// dropped by the next mount's recovery, with one bounded log line, instead
// of failing every recovery after it and keeping its staging folder for
// ever; the other files of that folder are uploaded.
func TestRecoveryDropsPathsTooLong(t *testing.T) {
	e := setup(t)
	cacheDir := t.TempDir()
	dead, err := mount.OpenStaging(cacheDir)
	mustNil(t, err)
	long := strings.Repeat("/"+strings.Repeat("d", 255), 16) + "/f"
	for i, p := range []string{long, "/" + strings.Repeat("n", 256), "/ok"} {
		note := fmt.Sprintf(`{"path":%q}`, p)
		mustNil(t, os.WriteFile(filepath.Join(dead.Dir, fmt.Sprintf("stage-%d.wb", i)), []byte(note), 0o600))
		mustNil(t, os.WriteFile(filepath.Join(dead.Dir, fmt.Sprintf("stage-%d", i)), []byte("data"), 0o600))
	}
	dead.Abandon()

	logs := &testutil.SyncBuffer{}
	next, err := mount.OpenStaging(cacheDir)
	mustNil(t, err)
	defer next.Close(slog.Default())
	n, err := next.Recover(context.Background(), mount.NewHTTPBackend(e.c), slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil || n != 1 {
		t.Fatalf("recovery: %d files, %v; want the one it can upload", n, err)
	}
	if !e.serverHas("/ok") {
		t.Errorf("/ok was not uploaded")
	}
	if _, err := os.Stat(dead.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead mount's staging folder is still there: %v", err)
	}
	if c := strings.Count(logs.String(), "cannot hold its path"); c != 2 {
		t.Errorf("%d lines about dropped files, want 2:\n%s", c, logs.String())
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if len(line) > 1024 {
			t.Errorf("a log line of %d bytes: %.200s…", len(line), line)
		}
	}
}
