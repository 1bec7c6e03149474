package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"netdisk/drive/drivetest"
	"netdisk/testutil"
)

// newServer is the server over the in-process test drive (drivetest) on clock,
// with the named users (password drivetest.Password(name)).
func newServer(t *testing.T, clock *testutil.Clock, users ...string) *Server {
	t.Helper()
	env := drivetest.New(t, drivetest.Options{Clock: clock})
	for _, name := range users {
		env.AddUser(t, name, 0)
	}
	return New(Config{Drive: env.Drive, Now: clock.Now})
}

// newTestServer is newServer with the user alice, listening on loopback.
func newTestServer(t *testing.T, clock *testutil.Clock) (*Server, *httptest.Server) {
	t.Helper()
	s := newServer(t, clock, "alice")
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return s, hs
}

func get(t *testing.T, url, user, pass string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	b.Write(buf[:n])
	return resp.StatusCode, b.String(), resp.Header
}

func TestAuthSameAnswer(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	_, hs := newTestServer(t, clock)
	code, _, h := get(t, hs.URL+"/dav/", "", "")
	if code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), "Basic") {
		t.Fatalf("no credentials: %d %q", code, h.Get("WWW-Authenticate"))
	}
	c1, b1, _ := get(t, hs.URL+"/dav/", "alice", "wrong")
	c2, b2, _ := get(t, hs.URL+"/dav/", "mallory", "wrong")
	if c1 != 401 || c2 != 401 || b1 != b2 {
		t.Fatalf("unknown user and wrong password differ: %d %q / %d %q", c1, b1, c2, b2)
	}
}

// TestHealthAndMetrics: /healthz is open; /metrics on the public listener
// needs an admin (401 anonymous, 403 for a user, 200 for an admin).
func TestHealthAndMetrics(t *testing.T) {
	s, hs := newTestServer(t, testutil.NewClock(time.Now()))
	if _, err := s.d.AddUser(context.Background(), "root", "root-pass", true, 0); err != nil {
		t.Fatal(err)
	}
	if code, body, _ := get(t, hs.URL+"/healthz", "", ""); code != 200 || body != "ok\n" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	get(t, hs.URL+"/dav/", "alice", "pw-alice")
	if code, _, h := get(t, hs.URL+"/metrics", "", ""); code != 401 || h.Get("WWW-Authenticate") == "" {
		t.Fatalf("anonymous /metrics: %d", code)
	}
	if code, _, _ := get(t, hs.URL+"/metrics", "alice", "pw-alice"); code != 403 {
		t.Fatalf("non-admin /metrics: %d, want 403", code)
	}
	req, _ := http.NewRequest("GET", hs.URL+"/metrics", nil)
	req.SetBasicAuth("root", "root-pass")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `netdisk_http_requests_total{code=`) {
		t.Fatalf("admin /metrics: %d, lacks netdisk_http_requests_total", resp.StatusCode)
	}
}
