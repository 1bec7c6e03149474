package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/internal/testutil"
	"netdisk/meta"
)

func newTestServer(t *testing.T, clock *testutil.Clock) (*Server, *httptest.Server) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	m, err := meta.OpenSQLite(ctx, filepath.Join(dir, "meta.db"), clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	blobs, err := dedup.NewDiskStore(filepath.Join(dir, "chunks"))
	if err != nil {
		t.Fatal(err)
	}
	d := drive.New(drive.Config{Meta: m, Blobs: blobs, Now: clock.Now})
	if _, err := d.AddUser(ctx, "alice", "secret", false, 0); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Drive: d, Now: clock.Now})
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

func TestHealthAndMetrics(t *testing.T) {
	_, hs := newTestServer(t, testutil.NewClock(time.Now()))
	if code, body, _ := get(t, hs.URL+"/healthz", "", ""); code != 200 || body != "ok\n" {
		t.Fatalf("healthz: %d %q", code, body)
	}
	get(t, hs.URL+"/dav/", "alice", "secret")
	resp, err := http.Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if !strings.Contains(sb.String(), `netdisk_http_requests_total{code=`) {
		t.Fatal("metrics lack netdisk_http_requests_total")
	}
}
