package e2e

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"

	"netdisk/testutil"
)

// rawRequest sends a request whose request-target is exactly target (no
// client-side cleaning or re-encoding), following redirects as clients do.
func (e *env) rawRequest(method, target, user, pass string, hdr map[string]string) (int, []byte) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(e.t), method, e.d.URL+"/", nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.URL.Opaque = target
	req.SetBasicAuth(user, pass)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := e.c.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// User B cannot read, list, delete, move or copy user A's files by any path
// trick, and the attempts change neither tree.
func TestCrossUserIsolation(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.addUser("bob", "bob-pw")
	secret := append([]byte("ALICE-SECRET-"), testutil.RandBytes(1000)...)
	top := []byte("alice top-level file")
	mine := []byte("bob's own file")
	e.mkcol("alice", "alice-pw", "/dav/aliceonly")
	e.put("alice", "alice-pw", "/dav/aliceonly/a.txt", secret)
	e.put("alice", "alice-pw", "/dav/alicetop.txt", top)
	e.put("bob", "bob-pw", "/dav/mine.txt", mine)
	aliceRoot := e.propfindNames("alice", "alice-pw", "/dav/")
	aliceDir := e.propfindNames("alice", "alice-pw", "/dav/aliceonly/")
	bobRoot := e.propfindNames("bob", "bob-pw", "/dav/")

	targets := []string{
		"/dav/aliceonly/a.txt",
		"/dav/alicetop.txt",
		"/dav/../dav/aliceonly/a.txt",
		"/dav/%2e%2e/aliceonly/a.txt",
		"/dav/%2E%2E/%2e%2e/dav/aliceonly/a.txt",
		"/dav/x/..%2f..%2faliceonly%2fa.txt",
		"/dav/%2faliceonly%2fa.txt",
		"/dav//aliceonly//a.txt",
		"/dav/./aliceonly/./a.txt",
		"/dav/..;/aliceonly/a.txt",
		"/dav/aliceonly%00/a.txt",
		"/dav/..\\aliceonly\\a.txt",
		"/api/../dav/aliceonly/a.txt",
		"/dav/aliceonly/",
		"/dav/%2e%2e/",
	}
	dests := []string{
		e.d.URL + "/dav/../aliceonly/stolen.txt",
		e.d.URL + "/dav/%2e%2e/aliceonly/stolen.txt",
		e.d.URL + "/dav/aliceonly/stolen.txt",
		e.d.URL + "/api/v1/stolen.txt",
		"http://elsewhere.example/dav/stolen.txt",
		"/dav/%2e%2e/stolen.txt",
	}
	for _, tg := range targets {
		for _, m := range []string{"GET", "HEAD", "PROPFIND", "DELETE"} {
			var hdr map[string]string
			if m == "PROPFIND" {
				hdr = map[string]string{"Depth": "1"}
			}
			st, body := e.rawRequest(m, tg, "bob", "bob-pw", hdr)
			if st/100 == 2 || bytes.Contains(body, []byte("ALICE-SECRET")) || bytes.Contains(body, top) {
				t.Errorf("bob %s %s: %d %.200q — must fail and reveal nothing", m, tg, st, body)
			}
		}
		for _, m := range []string{"MOVE", "COPY"} {
			st, body := e.rawRequest(m, tg, "bob", "bob-pw", map[string]string{"Destination": e.d.URL + "/dav/stolen.txt"})
			if st/100 == 2 {
				t.Errorf("bob %s %s → /dav/stolen.txt: %d %.200q", m, tg, st, body)
			}
		}
	}
	// Destinations that leave bob's space, from bob's own file.
	for _, dst := range dests {
		for _, m := range []string{"COPY", "MOVE"} {
			st, body := e.rawRequest(m, "/dav/mine.txt", "bob", "bob-pw", map[string]string{"Destination": dst, "Overwrite": "T"})
			if st/100 == 2 {
				t.Errorf("bob %s /dav/mine.txt → %s: %d %.200q", m, dst, st, body)
			}
		}
	}

	// Both trees are exactly as before.
	e.mustGet("alice", "alice-pw", "/dav/aliceonly/a.txt", secret)
	e.mustGet("alice", "alice-pw", "/dav/alicetop.txt", top)
	e.mustGet("bob", "bob-pw", "/dav/mine.txt", mine)
	for _, c := range []struct {
		user, pass, path string
		want             []string
	}{
		{"alice", "alice-pw", "/dav/", aliceRoot},
		{"alice", "alice-pw", "/dav/aliceonly/", aliceDir},
		{"bob", "bob-pw", "/dav/", bobRoot},
	} {
		got := e.propfindNames(c.user, c.pass, c.path)
		slices.Sort(got)
		slices.Sort(c.want)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s's %s changed: %q → %q", c.user, c.path, c.want, got)
		}
	}
	if len(bobRoot) != 2 {
		t.Errorf("bob's root should list itself and mine.txt only: %q", bobRoot)
	}
}
