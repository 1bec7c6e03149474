package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// cpuSeconds returns the CPU time (user + system) a process has used, in
// seconds, from /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s
// on Linux).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count after its ')'.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	return float64(ut+st) / 100, nil
}

// treeCPUSeconds is cpuSeconds of a process and its live descendants
// (nginx serves from worker processes), found through
// /proc/PID/task/TID/children.
func treeCPUSeconds(pid int) (float64, error) {
	sum, err := cpuSeconds(pid)
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
