// Package testutil starts real components for tests: the netdisk binary on a
// loopback port with a temp data dir, redis-server processes, and checks for
// external tools. Under CI=true a missing tool fails the test instead of
// skipping it.
//
// It imports no netdisk package, so the tests of every layer can use it, and
// only tests, other rigs and benchmarks link it (testutil/deptest's layer
// test checks both).
package testutil

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
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
	return filepath.Clean(filepath.Join(filepath.Dir(file), ".."))
}

// BuildBinary compiles cmd/netdisk into dir and returns its path.
func BuildBinary(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "netdisk")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/netdisk")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/netdisk: %v\n%s", err, out)
	}
	return bin, nil
}

// Binary builds cmd/netdisk once per test process and returns its path.
// NETDISK_BIN overrides it with a prebuilt binary.
//
// Every test process of a checkout publishes its build at the same path
// (sharedBinDir): a directory of its own per process stayed behind after
// each one, about 35 MB a package a run. The build is renamed into place,
// so a process still running the one it replaces keeps that file; all are
// built from the same sources.
func Binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("NETDISK_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir := sharedBinDir()
		if buildErr = os.MkdirAll(dir, 0o755); buildErr != nil {
			return
		}
		tmp, err := os.MkdirTemp(dir, "build-")
		if err != nil {
			buildErr = err
			return
		}
		defer os.RemoveAll(tmp)
		built, err := BuildBinary(context.Background(), tmp)
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "netdisk")
		buildErr = os.Rename(built, binPath)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// sharedBinDir is where Binary publishes the build of this checkout: one
// directory per module root, so that two checkouts tested at once (git
// worktrees) never run each other's binary.
func sharedBinDir() string {
	sum := sha256.Sum256([]byte(RepoRoot()))
	return filepath.Join(os.TempDir(), "netdisk-test-bin-"+hex.EncodeToString(sum[:6]))
}

// DaemonConfig describes a `netdisk serve` to launch.
type DaemonConfig struct {
	Bin       string    // the netdisk binary
	DataDir   string    // created if missing
	AdminPass string    // the first admin's password
	Listen    string    // "" means 127.0.0.1:0 (a free loopback port)
	LogLevel  string    // "" means debug
	Args      []string  // more flags for serve
	Output    io.Writer // also receives what the daemon prints (Logs keeps it too)
}

// Daemon is a running `netdisk serve`.
type Daemon struct {
	t         testing.TB // nil when launched by LaunchDaemon
	URL       string     // http://127.0.0.1:PORT
	Addr      string
	DataDir   string
	AdminPass string
	Args      []string
	cfg       DaemonConfig
	proc      *proc // the current process
}

// LaunchDaemon starts `netdisk serve` as c says and waits until it listens
// (its ready file). The caller stops it (Stop or Kill). For programs such as
// the benchmarks; tests use StartDaemon.
func LaunchDaemon(ctx context.Context, c DaemonConfig) (*Daemon, error) {
	if c.Listen == "" {
		c.Listen = "127.0.0.1:0"
	}
	if c.LogLevel == "" {
		c.LogLevel = "debug"
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, err
	}
	d := &Daemon{DataDir: c.DataDir, AdminPass: c.AdminPass, Args: c.Args, cfg: c}
	if err := d.start(ctx, c.Listen); err != nil {
		return nil, err
	}
	return d, nil
}

// StartDaemon starts the real binary with a temp data dir on a free loopback
// port; extra flags are appended. It is stopped at test cleanup.
func StartDaemon(t testing.TB, extra ...string) *Daemon {
	t.Helper()
	d, err := LaunchDaemon(context.Background(), DaemonConfig{Bin: Binary(t), DataDir: t.TempDir(),
		AdminPass: "admin-test-pass", Args: extra})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	d.t = t
	return d
}

func (d *Daemon) start(ctx context.Context, listen string) error {
	ready := filepath.Join(d.DataDir, fmt.Sprintf("ready-%d", time.Now().UnixNano()))
	args := append([]string{"serve", "--data", d.DataDir, "--listen", listen, "--ready-file", ready,
		"--log-level", d.cfg.LogLevel}, d.cfg.Args...)
	cmd := exec.Command(d.cfg.Bin, args...)
	cmd.Env = append(os.Environ(), "NETDISK_ADMIN_PASSWORD="+d.AdminPass)
	p, err := startProc("netdisk serve", cmd, d.cfg.Output)
	if err != nil {
		return err
	}
	d.proc = p
	return p.waitReady(ctx, 30*time.Second, 20*time.Millisecond, func() error {
		b, err := os.ReadFile(ready)
		if err != nil || len(b) == 0 {
			return fmt.Errorf("no address in the ready file yet (%v)", err)
		}
		d.Addr = strings.TrimSpace(string(b))
		d.URL = "http://" + d.Addr
		if slices.ContainsFunc(d.cfg.Args, func(a string) bool {
			return a == "--tls-cert" || a == "--tls-self-signed" || strings.HasPrefix(a, "--tls-cert=") ||
				a == "--acme-domain" || strings.HasPrefix(a, "--acme-domain=")
		}) {
			d.URL = "https://" + d.Addr
		}
		return nil
	})
}

// SyncBuffer collects what a process (or a logger) writes while the test
// reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Logs returns what the daemon printed since it last started.
func (d *Daemon) Logs() string { return d.proc.log.String() }

// Pid is the daemon's process id.
func (d *Daemon) Pid() int { return d.proc.cmd.Process.Pid }

// Kill kills the daemon with SIGKILL (a crash) and waits for it.
func (d *Daemon) Kill() {
	if d.proc != nil {
		d.proc.kill(syscall.SIGKILL)
	}
}

// Stop sends SIGTERM and waits up to 30 s, then kills.
func (d *Daemon) Stop() {
	if d.proc != nil {
		d.proc.stop(30 * time.Second)
	}
}

// Restart starts the daemon of a test again on the same address and data
// dir (after Kill or Stop).
func (d *Daemon) Restart() {
	d.t.Helper()
	d.Stop()
	if err := d.start(context.Background(), d.Addr); err != nil {
		d.t.Fatal(err)
	}
}

// Request builds a request to the daemon as user:pass (no credentials when
// user is "").
func (d *Daemon) Request(ctx context.Context, method, path, user, pass string, body io.Reader, hdr map[string]string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, d.URL+path, body)
	if err != nil {
		return nil, err
	}
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	if method == http.MethodPost && body != nil && strings.HasPrefix(path, "/api/") {
		// An API client declares its JSON (api.RequireJSON); a test that
		// sends another type says so in hdr.
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	return req, nil
}

// Do sends a request as user:pass and returns the response (body unread).
func (d *Daemon) Do(ctx context.Context, method, path, user, pass string, body []byte, hdr map[string]string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := d.Request(ctx, method, path, user, pass, rd, hdr)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}
