package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"netdisk/bench/internal/procstat"
	"netdisk/testutil"
)

// server is one WebDAV server under test, run as a child process: netdisk
// and rclone through the test suite's launchers.
type server struct {
	name       string
	base       string // URL of the WebDAV root, no trailing slash
	api        string // netdisk: URL of the server root (for /api/v1); "" for rclone
	user, pass string
	daemon     *testutil.Daemon
	rclone     *testutil.RcloneWebDAV
	log        *os.File // the server's output
	anchorPid  int      // an anchor's process (anchor)
}

func (s *server) pid() int {
	switch {
	case s.daemon != nil:
		return s.daemon.Pid()
	case s.rclone != nil:
		return s.rclone.Pid()
	}
	return s.anchorPid
}

// stop sends SIGTERM and waits (then SIGKILL after 30 s for netdisk, 20 s
// for rclone).
func (s *server) stop() {
	if s == nil {
		return
	}
	if s.daemon != nil {
		s.daemon.Stop()
	} else {
		s.rclone.Stop()
	}
	s.log.Close()
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

// startRclone launches `rclone serve webdav` on work/rclone-root, its output
// in work/rclone.log.
func startRclone(ctx context.Context, work string) (*server, error) {
	root := filepath.Join(work, "rclone-root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(work, "rclone.log"))
	if err != nil {
		return nil, err
	}
	rc, err := testutil.LaunchRcloneWebDAV(ctx, root, "bench", "bench-pass", logf)
	if err != nil {
		logf.Close()
		return nil, err
	}
	return &server{name: "rclone", base: rc.URL, user: rc.User, pass: rc.Pass, rclone: rc, log: logf}, nil
}

// treeCPUSeconds is cpuSeconds of a process and its live descendants
// (nginx serves from worker processes), found through
// /proc/PID/task/TID/children.
func treeCPUSeconds(pid int) (float64, error) {
	sum, err := procstat.CPUSeconds(pid)
	if err != nil {
		return 0, err
	}
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				if v, err := treeCPUSeconds(c); err == nil {
					sum += v
				}
			}
		}
	}
	return sum, nil
}
