package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"netdisk/testutil"
)

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func fetch(t *testing.T, d *testutil.Daemon, method, url, user, pass string, body []byte) (int, string) {
	t.Helper()
	var resp *http.Response
	var err error
	if strings.HasPrefix(url, "http") {
		resp, err = http.Get(url)
	} else {
		resp, err = d.Do(context.Background(), method, url, user, pass, body, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsListen: the real daemon serves /metrics without authentication
// on --metrics-listen, and only to admins on --listen.
func TestMetricsListen(t *testing.T) {
	maddr := freeAddr(t)
	d := testutil.StartDaemon(t, "--metrics-listen", maddr)
	if code, _ := fetch(t, d, "GET", "/metrics", "", "", nil); code != 401 {
		t.Fatalf("anonymous /metrics on --listen: %d, want 401", code)
	}
	if code, body := fetch(t, d, "GET", "/metrics", "admin", d.AdminPass, nil); code != 200 || !strings.Contains(body, "netdisk_http_requests_total") {
		t.Fatalf("admin /metrics on --listen: %d", code)
	}
	if code, body := fetch(t, d, "GET", "http://"+maddr+"/metrics", "", "", nil); code != 200 || !strings.Contains(body, "netdisk_http_requests_total") {
		t.Fatalf("/metrics on --metrics-listen: %d %.200s", code, body)
	}
}

// TestLedgerDownHidesAddress: with Redis killed, uploads answer 503 with a
// generic text that does not name Redis's address.
func TestLedgerDownHidesAddress(t *testing.T) {
	r := testutil.StartRedis(t)
	d := testutil.StartDaemon(t, "--redis", r.URL)
	if code, _ := fetch(t, d, "PUT", "/dav/before.txt", "admin", d.AdminPass, []byte("hi")); code != 201 {
		t.Fatalf("PUT with Redis up: %d", code)
	}
	r.Kill()
	_, port, _ := net.SplitHostPort(r.Addr)
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/dav/after.txt", "hello"},
		{"POST", "/api/v1/file/init", `{"path":"/n.bin","size":10}`},
	} {
		code, body := fetch(t, d, c.method, c.path, "admin", d.AdminPass, []byte(c.body))
		if code != 503 {
			t.Fatalf("%s %s with Redis down: %d %s, want 503", c.method, c.path, code, body)
		}
		if strings.Contains(body, r.Addr) || strings.Contains(body, port) || strings.Contains(body, "127.0.0.1") || strings.Contains(body, "dial") {
			t.Fatalf("%s %s: 503 body leaks the address: %s", c.method, c.path, body)
		}
		if !strings.Contains(body, "quota ledger unreachable") {
			t.Fatalf("%s %s: 503 body %q, want the generic ledger text", c.method, c.path, body)
		}
	}
}
