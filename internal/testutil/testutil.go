// Package testutil starts real components for tests: the netdisk binary on a
// loopback port with a temp data dir, redis-server processes, and checks for
// external tools. Under CI=true a missing tool fails the test instead of
// skipping it.
package testutil

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// InCI reports whether tests run under CI (missing dependencies then fail).
func InCI() bool { return os.Getenv("CI") == "true" }

// RequireTool returns the path of an external program, skipping the test when
// it is missing locally and failing it under CI.
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if InCI() {
			t.Fatalf("%s is required under CI but not installed (see .ci/run)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// RepoRoot returns the module root.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Binary builds cmd/netdisk once per test process and returns its path.
// NETDISK_BIN overrides it with a prebuilt binary.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("NETDISK_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "netdisk-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "netdisk")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/netdisk")
		cmd.Dir = RepoRoot()
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// Daemon is a running `netdisk serve`.
type Daemon struct {
	t         testing.TB
	URL       string // http://127.0.0.1:PORT
	Addr      string
	DataDir   string
	AdminPass string
	Args      []string
	Log       *bytes.Buffer
	cmd       *exec.Cmd
	exited    chan struct{}
	mu        sync.Mutex
}

// StartDaemon starts the real binary with a temp data dir on a free loopback
// port; extra flags are appended. It is killed at test cleanup.
func StartDaemon(t testing.TB, extra ...string) *Daemon {
	t.Helper()
	d := &Daemon{t: t, DataDir: t.TempDir(), AdminPass: "admin-test-pass", Args: extra}
	d.start("127.0.0.1:0")
	t.Cleanup(d.Stop)
	return d
}

func (d *Daemon) start(listen string) {
	d.t.Helper()
	ready := filepath.Join(d.DataDir, fmt.Sprintf("ready-%d", time.Now().UnixNano()))
	args := append([]string{"serve", "--data", d.DataDir, "--listen", listen, "--ready-file", ready, "--log-level", "debug"}, d.Args...)
	cmd := exec.Command(Binary(d.t), args...)
	cmd.Env = append(os.Environ(), "NETDISK_ADMIN_PASSWORD="+d.AdminPass)
	d.Log = &bytes.Buffer{}
	w := &lockedWriter{mu: &d.mu, b: d.Log}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		d.t.Fatal(err)
	}
	d.cmd = cmd
	exited := make(chan struct{})
	d.exited = exited
	go func() { cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			d.Addr = strings.TrimSpace(string(b))
			d.URL = "http://" + d.Addr
			return
		}
		select {
		case <-exited:
			d.t.Fatalf("netdisk serve exited early:\n%s", d.Logs())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("netdisk serve not ready after 30s:\n%s", d.Logs())
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Logs returns what the daemon printed.
func (d *Daemon) Logs() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.Log.String()
}

// Kill kills the daemon with SIGKILL (a crash) and waits for it.
func (d *Daemon) Kill() {
	if d.cmd == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// Stop sends SIGTERM and waits up to 30 s, then kills.
func (d *Daemon) Stop() {
	if d.cmd == nil {
		return
	}
	select {
	case <-d.exited:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		d.Kill()
	}
}

// Restart starts the daemon again on the same address and data dir (after
// Kill or Stop).
func (d *Daemon) Restart() {
	d.t.Helper()
	d.Stop()
	d.start(d.Addr)
}

// Do sends a request as user:pass and returns the response (body unread).
func (d *Daemon) Do(ctx context.Context, method, path, user, pass string, body []byte, hdr map[string]string) (*http.Response, error) {
	var rd *bytes.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequestWithContext(ctx, method, d.URL+path, rd)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, d.URL+path, nil)
	}
	if err != nil {
		return nil, err
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return http.DefaultClient.Do(req)
}
