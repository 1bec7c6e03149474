package testutil

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"time"
)

// RcloneWebDAV is `rclone serve webdav` on a local folder: the reference
// WebDAV server the benchmarks compare netdisk with.
type RcloneWebDAV struct {
	URL        string // http://127.0.0.1:PORT, the WebDAV root
	User, Pass string // the Basic auth it asks for; "" for none
	proc       *proc
}

// LaunchRcloneWebDAV serves root over WebDAV on a free loopback port,
// asking for user and pass unless user is "", its output also copied to out
// when not nil, and waits until it answers PROPFIND. The caller stops it
// (Stop). For programs such as the benchmarks.
func LaunchRcloneWebDAV(ctx context.Context, root, user, pass string, out io.Writer) (*RcloneWebDAV, error) {
	bin, err := exec.LookPath("rclone")
	if err != nil {
		return nil, err
	}
	s := &RcloneWebDAV{User: user, Pass: pass}
	err = onFreePort(func(addr string) error {
		args := []string{"serve", "webdav", root, "--addr", addr, "--config", "/dev/null"}
		if user != "" {
			args = append(args, "--user", user, "--pass", pass)
		}
		p, err := startProc("rclone serve webdav", exec.Command(bin, args...), out)
		if err != nil {
			return err
		}
		s.URL = "http://" + addr
		if err := p.waitReady(ctx, 30*time.Second, 50*time.Millisecond, s.answers); err != nil {
			return err
		}
		s.proc = p
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("start rclone serve webdav: %w", err)
	}
	return s, nil
}

// answers is nil once the root answers PROPFIND Depth 0 with 207.
func (s *RcloneWebDAV) answers() error {
	req, err := http.NewRequest("PROPFIND", s.URL+"/", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Depth", "0")
	if s.User != "" {
		req.SetBasicAuth(s.User, s.Pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMultiStatus {
		return fmt.Errorf("PROPFIND /: %s", resp.Status)
	}
	return nil
}

// Pid is the server's process ID.
func (s *RcloneWebDAV) Pid() int { return s.proc.cmd.Process.Pid }

// Stop sends SIGTERM and waits up to 20 s for rclone to exit, then kills it.
func (s *RcloneWebDAV) Stop() { s.proc.stop(20 * time.Second) }
