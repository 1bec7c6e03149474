package mount_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/mount"
	"netdisk/testutil"
)

// setupVia is setup with the mount talking to the daemon through front,
// which gets the daemon's URL and returns the one the mount uses.
func setupVia(t *testing.T, front func(daemonURL string) string, opts ...func(*mount.Options)) *env {
	t.Helper()
	testutil.RequireTool(t, "fusermount3")
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	admin := client.New(d.URL, "admin", d.AdminPass)
	if _, err := admin.AdminAddUser(context.Background(), apitype.NewUser{Name: "alice", Password: "alice-pass"}); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, d: d, c: client.New(front(d.URL), "alice", "alice-pass")}
	e.mount(opts...)
	return e
}

// cSignalWriter creates, writes and closes argv[2] files in argv[1] while
// a 2 ms ITIMER_REAL interrupts it (SA_RESTART, as git's progress display
// does): every call must succeed.
const cSignalWriter = `
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t ticks;
static void tick(int sig) { (void)sig; ticks++; }

int main(int argc, char **argv) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 2000}, {0, 2000}};
	setitimer(ITIMER_REAL, &it, NULL);
	int n = atoi(argv[2]);
	char path[4096], buf[256];
	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof path, "%s/f%05d", argv[1], i);
		int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0) { fprintf(stderr, "open %s: %s\n", path, strerror(errno)); return 1; }
		int len = snprintf(buf, sizeof buf, "file %d of %d\n", i, n);
		if (write(fd, buf, len) != len) { fprintf(stderr, "write %s: %s\n", path, strerror(errno)); return 1; }
		if (close(fd) != 0) { fprintf(stderr, "close %s: %s\n", path, strerror(errno)); return 1; }
	}
	printf("ticks %d\n", (int)ticks);
	return 0;
}
`

// TestSignalsDoNotBreakCreate: go-fuse cancels a request's context when
// the kernel interrupts it for a signal; creates and closes must complete
// anyway, and leave no half-made file behind.
func TestSignalsDoNotBreakCreate(t *testing.T) {
	gcc := testutil.RequireTool(t, "gcc")
	e := setup(t)
	src := filepath.Join(t.TempDir(), "sigwrite.c")
	bin := filepath.Join(t.TempDir(), "sigwrite")
	if err := os.WriteFile(src, []byte(cSignalWriter), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-O1", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	const n = 2000
	dir := filepath.Join(e.mnt, "sig")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, dir, fmt.Sprint(n)).CombinedOutput()
	if err != nil {
		t.Fatalf("writer under a 2 ms timer: %v\n%s", err, out)
	}
	t.Logf("%s", bytes.TrimSpace(out))
	// Checked on the server, not through the mount's own state.
	es, err := e.c.List(context.Background(), "/sig")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != n {
		t.Fatalf("server has %d files, want %d", len(es), n)
	}
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("f%05d", i))
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("file %d of %d\n", i, n); string(got) != want {
			t.Fatalf("%s: %q, want %q", p, got, want)
		}
	}
}

// TestGitCloneProgress: git clone with its progress display (a SIGALRM
// timer) into the mount works and leaves a clean work tree.
func TestGitCloneProgress(t *testing.T) {
	git := testutil.RequireTool(t, "git")
	e := setup(t)
	home := t.TempDir()
	run := func(dir string, args ...string) string {
		t.Helper()
		// git -C, not cmd.Dir: the mount is served by this very test
		// process, and cmd.Dir makes the vfork child chdir into it before
		// exec, while the forking thread of the process that must answer
		// waits for that exec. Seen to hang under -race (the child stuck in
		// chdir, the FUSE request unanswered). A separate `netdisk mount`
		// process, as users run it, never forks into its own mount.
		cmd := exec.Command(git, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	repo := t.TempDir()
	run(repo, "init", "-q", "-b", "main")
	for i := 0; i < 300; i++ {
		p := filepath.Join(repo, fmt.Sprintf("d%02d", i%17), fmt.Sprintf("file%03d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, bytes.Repeat([]byte(fmt.Sprintf("line of file %d\n", i)), 1+i%50), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(repo, "big.bin"), testutil.RandBytes(300_000), 0o644)
	run(repo, "add", "-A")
	run(repo, "commit", "-q", "-m", "tree")
	run(e.mnt, "clone", "--progress", "--no-hardlinks", "file://"+repo, "clone")
	dst := filepath.Join(e.mnt, "clone")
	run(dst, "fsck", "--full")
	if st := run(dst, "status", "--porcelain"); st != "" {
		t.Fatalf("git status in the clone is not clean:\n%s", st)
	}
}

// TestOpenFileOutlivesUnlink: a file opened (nothing read yet) keeps
// reading the bytes it had when its name is unlinked or another file is
// renamed over it.
func TestOpenFileOutlivesUnlink(t *testing.T) {
	e := setup(t)
	for _, how := range []string{"unlink", "rename-over"} {
		t.Run(how, func(t *testing.T) {
			p := filepath.Join(e.mnt, how+".bin")
			old := testutil.RandBytes(5*testChunk + 123)
			if err := os.WriteFile(p, old, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			switch how {
			case "unlink":
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
			case "rename-over":
				other := filepath.Join(e.mnt, "other.bin")
				if err := os.WriteFile(other, testutil.RandBytes(1000), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(other, p); err != nil {
					t.Fatal(err)
				}
			}
			got, err := io.ReadAll(f)
			if err != nil {
				t.Fatalf("read after %s: %v", how, err)
			}
			if !bytes.Equal(got, old) {
				t.Fatalf("read after %s: %d bytes, not the old content (%d bytes)", how, len(got), len(old))
			}
		})
	}
}

// TestOpenFileFollowsRename: an fd reads its file after the file itself
// was renamed (reads go to the node's current name).
func TestOpenFileFollowsRename(t *testing.T) {
	e := setup(t)
	p, q := filepath.Join(e.mnt, "a.bin"), filepath.Join(e.mnt, "b.bin")
	data := testutil.RandBytes(3 * testChunk)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Rename(p, q); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read after rename: %d bytes, %v", len(got), err)
	}
}

// holdProxy forwards to the daemon but holds upload requests, once
// armed, until released: a link that is as slow as the test wants.
type holdProxy struct {
	mu      sync.Mutex
	armed   bool
	prefix  string        // the requests held: uploads unless set (armFor)
	entered chan struct{} // closed when the first held request arrives
	release chan struct{}
	once    sync.Once
	opened  sync.Once
}

func newHoldProxy(t *testing.T, target string) (*holdProxy, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &holdProxy{entered: make(chan struct{}), release: make(chan struct{})}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		prefix := h.prefix
		if prefix == "" {
			prefix = "/api/v1/file/"
		}
		hold := h.armed && strings.HasPrefix(r.URL.Path, prefix)
		h.mu.Unlock()
		if hold {
			h.once.Do(func() { close(h.entered) })
			select {
			case <-h.release:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(h.open) // never leave a request held at the end
	return h, srv.URL
}

func (h *holdProxy) arm() {
	h.mu.Lock()
	h.armed = true
	h.mu.Unlock()
}

// armFor holds the requests whose path starts with prefix (e.g. "/dav/":
// chunk downloads) instead of uploads.
func (h *holdProxy) armFor(prefix string) {
	h.mu.Lock()
	h.armed, h.prefix = true, prefix
	h.mu.Unlock()
}

func (h *holdProxy) open() { h.opened.Do(func() { close(h.release) }) }

// TestStatDuringSlowUpload: stat of a file whose close is uploading over a
// stalled link answers while the upload is provably still held.
func TestStatDuringSlowUpload(t *testing.T) {
	var hp *holdProxy
	e := setupVia(t, func(u string) string {
		var front string
		hp, front = newHoldProxy(t, u)
		return front
	}, func(o *mount.Options) { o.TTL = time.Nanosecond }) // every stat reaches the filesystem
	p := filepath.Join(e.mnt, "slow.bin")
	data := testutil.RandBytes(50_000) // under one chunk: nothing is sent ahead, close sends it all
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	hp.arm()
	closed := make(chan error, 1)
	go func() { closed <- f.Close() }()
	<-hp.entered // the upload is now held in the proxy

	stated := make(chan error, 1)
	var size int64
	go func() {
		st, err := os.Stat(p)
		if err == nil {
			size = st.Size()
		}
		stated <- err
	}()
	select {
	case err := <-stated:
		if err != nil {
			t.Fatal(err)
		}
	case err := <-closed:
		t.Fatalf("close finished (%v) while its upload was held", err)
	case <-time.After(20 * time.Second): // a guard against a hang, not a timing assumption
		t.Fatal("stat waited for the upload")
	}
	select {
	case err := <-closed:
		t.Fatalf("close finished (%v) while its upload was held", err)
	default:
	}
	if size != int64(len(data)) {
		t.Fatalf("stat during upload: size %d, want %d", size, len(data))
	}
	hp.open()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n, err := e.c.Stat(context.Background(), "/slow.bin"); err != nil || n.Size != int64(len(data)) {
		t.Fatalf("server has %+v, %v", n, err)
	}
	if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back: %d bytes, %v", len(got), err)
	}
}
