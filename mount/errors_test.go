package mount_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
