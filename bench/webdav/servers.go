package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"netdisk/internal/testutil"
)

// server is one WebDAV server under test, run as a child process: netdisk
// through the test suite's launcher (daemon), rclone as cmd.
type server struct {
	name       string
	base       string // URL of the WebDAV root, no trailing slash
	api        string // netdisk: URL of the server root (for /api/v1); "" for rclone
	user, pass string
	daemon     *testutil.Daemon
	log        *os.File // the daemon's output
	cmd        *exec.Cmd
	exited     chan struct{}
}

func (s *server) pid() int {
	if s.daemon != nil {
		return s.daemon.Pid()
	}
	return s.cmd.Process.Pid
}

// stop sends SIGTERM and waits (then SIGKILL after 20 s).
func (s *server) stop() {
	if s == nil {
		return
	}
	if s.daemon != nil {
		s.daemon.Stop()
		s.log.Close()
		return
	}
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
}

func startProcess(s *server, cmd *exec.Cmd, logPath string) error {
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", s.name, err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(s.exited) }()
	return nil
}

// startNetdisk launches `netdisk serve` as the test suite does, its output in
// work/netdisk.log.
func startNetdisk(ctx context.Context, bin, work string) (*server, error) {
	logf, err := os.Create(filepath.Join(work, "netdisk.log"))
	if err != nil {
		return nil, err
	}
	d, err := testutil.LaunchDaemon(ctx, testutil.DaemonConfig{Bin: bin, DataDir: filepath.Join(work, "netdisk-data"),
		AdminPass: "bench-admin-pass", LogLevel: "warn", Args: []string{"--gc-interval", "0"}, Output: logf})
	if err != nil {
		logf.Close()
		return nil, err
	}
	return &server{name: "netdisk", base: d.URL + "/dav", api: d.URL, user: "admin", pass: d.AdminPass, daemon: d, log: logf}, nil
}

func startRclone(ctx context.Context, c *http.Client, work string) (*server, error) {
	root := filepath.Join(work, "rclone-root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	s := &server{name: "rclone", base: "http://" + addr, user: "bench", pass: "bench-pass"}
	cmd := exec.Command("rclone", "serve", "webdav", root, "--addr", addr,
		"--user", s.user, "--pass", s.pass, "--config", filepath.Join(work, "rclone.conf"))
	if err := startProcess(s, cmd, filepath.Join(work, "rclone.log")); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, _, err := propfind(ctx, c, s, "/", "0"); err == nil && st == http.StatusMultiStatus {
			return s, nil
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("rclone exited early; see %s", filepath.Join(work, "rclone.log"))
		case <-ctx.Done():
			s.stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("rclone serve webdav not ready after 30 s")
		}
	}
}

// freePort asks the kernel for a free loopback port (rclone cannot report the
// port it bound to :0, so we pick one; a race here only fails the start).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// peakRSS returns VmHWM (peak resident set) of a process, in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v) // "12345 kB"
			if len(f) == 2 && f[1] == "kB" {
				n, err := strconv.ParseInt(f[0], 10, 64)
				return n << 10, err
			}
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}
