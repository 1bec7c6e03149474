package testutil

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Nginx is a real nginx balancing round-robin over several netdisk nodes,
// configured as docs/deploy.md advises (no request or response buffering,
// bodies of any size).
type Nginx struct {
	URL  string // http://127.0.0.1:PORT
	proc *proc
}

// StartNginx starts nginx in front of the upstream addresses (host:port);
// it is stopped at test cleanup. Missing nginx skips the test locally and
// fails it under CI.
func StartNginx(t testing.TB, upstreams ...string) *Nginx {
	t.Helper()
	RequireTool(t, "nginx")
	n, err := LaunchNginx(t.TempDir(), upstreams...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

// LaunchNginx starts nginx with its files in dir; the caller stops it
// (Stop). For programs such as the benchmarks; tests use StartNginx.
func LaunchNginx(dir string, upstreams ...string) (*Nginx, error) {
	bin, err := exec.LookPath("nginx")
	if err != nil {
		return nil, err
	}
	var n *Nginx
	err = onFreePort(func(addr string) (err error) {
		n, err = startNginx(bin, dir, addr, upstreams)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("start nginx: %w", err)
	}
	return n, nil
}

func startNginx(bin, dir, addr string, upstreams []string) (*Nginx, error) {
	var servers strings.Builder
	for _, u := range upstreams {
		fmt.Fprintf(&servers, "    server %s max_fails=0;\n", u)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n" // the workers read the temp dirs below, which only root may enter
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
  upstream netdisk {
%[3]s    keepalive 16;
  }
  server {
    listen %[4]s;
    client_max_body_size 0;
    proxy_request_buffering off;
    proxy_buffering off;
    proxy_http_version 1.1;
    proxy_read_timeout 300s;
    location / {
      proxy_pass http://netdisk;
      proxy_set_header Host $http_host;
      proxy_set_header Connection "";
      proxy_set_header X-Forwarded-For $remote_addr;
    }
  }
}
`, user, dir, servers.String(), addr)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-c", confPath, "-p", dir, "-e", filepath.Join(dir, "error.log"))
	// SIGTERM, not SIGKILL, when the test binary dies: the master then takes
	// its workers down with it instead of leaving them behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	p, err := startProc("nginx", cmd, nil)
	if err != nil {
		return nil, err
	}
	p.halt = func(p *proc) { p.stop(5 * time.Second) }
	n := &Nginx{URL: "http://" + addr, proc: p}
	err = p.waitReady(context.Background(), 10*time.Second, 20*time.Millisecond, func() error {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			return err
		}
		c.Close()
		// Listening; make sure it proxies (a 502 means a node is down,
		// still an answer from nginx).
		resp, err := http.Get(n.URL + "/healthz")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})
	if err != nil {
		elog, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		return nil, fmt.Errorf("%w\n%s", err, elog)
	}
	return n, nil
}

// Stop stops nginx (SIGTERM, then SIGKILL if it lingers).
func (n *Nginx) Stop() { n.proc.end() }
