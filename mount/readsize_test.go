package mount_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"netdisk/mount"
	"netdisk/testutil"
)

// readLog keeps the sizes of the READ requests in go-fuse's request log.
type readLog struct {
	mu     sync.Mutex
	buf    []byte
	sizes  []int
	errors []string // lines of go-fuse's own complaints
}

// A READ request is logged as "rx N: READ nI {Fh F [off +size) ...".
var readReq = regexp.MustCompile(`: READ n\d+ \{Fh \d+ \[\d+ \+(\d+)\)`)

func (l *readLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		if m := readReq.FindSubmatch(l.buf[:i]); m != nil {
			n, _ := strconv.Atoi(string(m[1]))
			l.sizes = append(l.sizes, n)
		}
		if bytes.Contains(l.buf[:i], []byte("trySplice")) && len(l.errors) < 3 {
			l.errors = append(l.errors, string(l.buf[:i]))
		}
		l.buf = l.buf[i+1:]
	}
	return len(p), nil
}

// A large sequential read through the mount reaches us in requests of
// 1 MiB, the most the kernel allows (FUSE max_pages 256), not in the
// 128 KiB of its default readahead: every request is a round trip
// through the kernel and a wake-up of the mount. Only root may raise a
// mount's readahead. Answers go to the kernel without a detour through a
// pipe.
func TestSequentialReadRequestSize(t *testing.T) {
	if os.Geteuid() != 0 {
		if testutil.InCI() {
			t.Fatal("raising a mount's readahead needs root, and CI runs as root")
		}
		t.Skip("raising a mount's readahead needs root")
	}
	e := setup(t)
	data := testutil.RandBytes(16<<20 + 123)
	e.put("big", data)
	// A second mount of the same user, logging its requests.
	// A space in its path: /proc/self/mountinfo writes it escaped.
	mnt := filepath.Join(t.TempDir(), "big mount")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	o := mount.Options{Backend: e.be, Cache: e.cache, StageDir: t.TempDir(), TTL: 200 * time.Millisecond,
		OpTimeout: 5 * time.Second, UploadTimeout: 30 * time.Second}
	fsys, err := mount.New(o)
	if err != nil {
		t.Fatal(err)
	}
	var l readLog
	srv, err := mount.MountLogged(mnt, fsys, "netdisk-test", &l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Unmount(); err != nil {
			exec.Command("fusermount3", "-u", "-z", mnt).Run()
		}
		fsys.Close()
	})
	got, err := os.ReadFile(filepath.Join(mnt, "big"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, not the file's %d", len(got), len(data))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	largest, total := 0, 0
	for _, n := range l.sizes {
		largest = max(largest, n)
		total += n
	}
	t.Logf("%d READ requests, largest %d, mean %d", len(l.sizes), largest, total/max(1, len(l.sizes)))
	if largest < 1<<20 {
		t.Errorf("largest READ request %d bytes, want 1 MiB", largest)
	}
	// An answer of 1 MiB does not fit a pipe: it must not be tried.
	for _, line := range l.errors {
		t.Errorf("go-fuse: %s", line)
	}
}
