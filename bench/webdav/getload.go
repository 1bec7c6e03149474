package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/webdav"
)

// getLoad sends GETs of path on conns keep-alive connections for d and
// returns the answers per second and the server's CPU time per answer
// (its process and children's, user and system): on a shared machine the
// rate depends on what else runs, the CPU per answer much less. It writes prepared request bytes and
// reads each answer by its Content-Length, as wrk does: net/http's client
// costs several times a small answer's serving, and on a machine of few
// cores the load generator's CPU is taken from the server measured.
func getLoad(ctx context.Context, s *server, path string, conns int, d time.Duration, wantLen int) (rps float64, cpuPer time.Duration, err error) {
	u, err := url.Parse(s.base + path)
	if err != nil {
		return 0, 0, err
	}
	cpu0, err := treeCPUSeconds(s.pid())
	if err != nil {
		return 0, 0, err
	}
	auth := base64.StdEncoding.EncodeToString([]byte(s.user + ":" + s.pass))
	req := []byte(fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Basic %s\r\n\r\n", u.EscapedPath(), u.Host, auth))
	var done atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, conns)
	deadline := time.Now().Add(d)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var dl net.Dialer
			c, err := dl.DialContext(ctx, "tcp", u.Host)
			if err != nil {
				errc <- err
				return
			}
			defer c.Close()
			c.SetDeadline(deadline.Add(10 * time.Second))
			br := bufio.NewReaderSize(c, 64<<10)
			body := make([]byte, wantLen)
			for time.Now().Before(deadline) && ctx.Err() == nil {
				if _, err := c.Write(req); err != nil {
					errc <- err
					return
				}
				n, err := readAnswer(br, body)
				if err != nil {
					errc <- fmt.Errorf("%s: GET %s: %w", s.name, path, err)
					return
				}
				if n != wantLen {
					errc <- fmt.Errorf("%s: GET %s: %d bytes, want %d", s.name, path, n, wantLen)
					return
				}
				done.Add(1)
			}
		}()
	}
	t0 := time.Now()
	wg.Wait()
	el := time.Since(t0)
	close(errc)
	if err := <-errc; err != nil {
		return 0, 0, err
	}
	cpu1, err := treeCPUSeconds(s.pid())
	if err != nil {
		return 0, 0, err
	}
	n := done.Load()
	return float64(n) / el.Seconds(), time.Duration((cpu1 - cpu0) / float64(max(n, 1)) * float64(time.Second)), nil
}

// readAnswer reads one HTTP/1.1 answer with a Content-Length into body and
// returns its length; any status but 200 is an error.
func readAnswer(br *bufio.Reader, body []byte) (int, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200")) {
		return 0, fmt.Errorf("answer %q", bytes.TrimSpace(line))
	}
	n := -1
	for {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(h) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(h, []byte(":")); ok && strings.EqualFold(string(k), "Content-Length") {
			if n, err = strconv.Atoi(string(bytes.TrimSpace(v))); err != nil {
				return 0, err
			}
		}
	}
	if n < 0 || n > len(body) {
		return 0, fmt.Errorf("answer without a Content-Length up to %d", len(body))
	}
	_, err = io.ReadFull(br, body[:n])
	return n, err
}

// serveXNetFlag runs this program as the plain golang.org/x/net/webdav
// server instead (webdav.Handler over webdav.Dir, Basic auth): the anchor
// of what Go's WebDAV package does with a directory and nothing else. It
// is a process of its own, as the other servers are, so its garbage
// collector and scheduler are not the load generator's.
const serveXNetFlag = "serve-xnet-webdav"

// serveXNet listens on a free loopback port, prints the address, and
// serves root until killed.
func serveXNet(root string) {
	user, pass := os.Getenv("BENCH_USER"), os.Getenv("BENCH_PASS")
	h := &webdav.Handler{FileSystem: webdav.Dir(root), LockSystem: webdav.NewMemLS()}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="bench"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// anchor is a server run only for the 4 KiB GET: x/net/webdav or nginx.
type anchor struct {
	server
	cmd *exec.Cmd
}

func (a *anchor) stop() {
	if a == nil || a.cmd == nil {
		return
	}
	a.cmd.Process.Signal(syscall.SIGTERM)
	a.cmd.Wait()
}

// startXNet starts this program again as the x/net/webdav server over
// work/xnet-root.
func startXNet(ctx context.Context, work string) (*anchor, error) {
	root := filepath.Join(work, "xnet-root")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "-"+serveXNetFlag, root)
	cmd.Env = append(os.Environ(), "BENCH_USER=bench", "BENCH_PASS=bench-pass")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("x/net/webdav server: %w", err)
	}
	return &anchor{server: server{name: "x/net/webdav", base: "http://" + strings.TrimSpace(addr), user: "bench", pass: "bench-pass", anchorPid: cmd.Process.Pid}, cmd: cmd}, nil
}

// startNginxStatic starts nginx serving work/nginx-root as static files
// behind Basic auth (one worker, no access log: as little as a static
// server does). Missing nginx is not an error: the anchor is left out.
func startNginxStatic(ctx context.Context, work string) (*anchor, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		return nil, nil
	}
	dir := filepath.Join(work, "nginx")
	root := filepath.Join(work, "nginx-root")
	for _, d := range []string{dir, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte("bench:{PLAIN}bench-pass\n"), 0o644); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n"
	}
	conf := fmt.Sprintf(`%sdaemon off;
master_process on;
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path %[2]s/body;
  proxy_temp_path %[2]s/proxy;
  fastcgi_temp_path %[2]s/fastcgi;
  uwsgi_temp_path %[2]s/uwsgi;
  scgi_temp_path %[2]s/scgi;
  sendfile on;
  keepalive_requests 1000000;
  server {
    listen %[3]s;
    root %[4]s;
    auth_basic "bench";
    auth_basic_user_file %[2]s/htpasswd;
  }
}
`, user, dir, addr, root)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "-c", confPath, "-p", dir, "-e", filepath.Join(dir, "error.log"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	a := &anchor{server: server{name: "nginx", base: "http://" + addr, user: "bench", pass: "bench-pass", anchorPid: cmd.Process.Pid}, cmd: cmd}
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return a, nil
		}
		if i == 100 {
			a.stop()
			elog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			return nil, fmt.Errorf("nginx did not listen: %w\n%s", err, elog)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
