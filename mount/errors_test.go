package mount_test

import (
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

// TestServerDownIsEIO: with the server stopped an operation fails with EIO
// once --timeout is over (not ECONNREFUSED at once); one started while the
// server is down succeeds when it comes back within the timeout.
func TestServerDownIsEIO(t *testing.T) {
	e := setup(t, func(o *mount.Options) { o.OpTimeout = 2 * time.Second })
	if err := os.WriteFile(filepath.Join(e.mnt, "a"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.d.Stop()
	var st syscall.Stat_t
	start := time.Now()
	err := syscall.Stat(filepath.Join(e.mnt, "not-cached"), &st)
	if took := time.Since(start); !errors.Is(err, syscall.EIO) || took < 1500*time.Millisecond {
		t.Fatalf("stat with the server down: %v after %v, want EIO after the 2s timeout", err, took)
	}
	if err := syscall.Mkdir(filepath.Join(e.mnt, "d"), 0o755); !errors.Is(err, syscall.EIO) {
		t.Fatalf("mkdir with the server down: %v, want EIO", err)
	}
	e.d.Restart()
	if err := syscall.Stat(filepath.Join(e.mnt, "a"), &st); err != nil || st.Size != 1 {
		t.Fatalf("stat once the server is back: %v, size %d", err, st.Size)
	}
	if err := syscall.Mkdir(filepath.Join(e.mnt, "d"), 0o755); err != nil {
		t.Fatalf("mkdir once the server is back: %v", err)
	}

	// A mount with a long timeout keeps trying: the call started while the
	// server is down returns once it is back.
	e.mount(func(o *mount.Options) { o.OpTimeout = time.Minute })
	e.d.Stop()
	done := make(chan error, 1)
	go func() {
		var st syscall.Stat_t
		done <- syscall.Stat(filepath.Join(e.mnt, "a"), &st)
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
		if err != nil {
			t.Fatalf("stat across a server restart: %v", err)
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
