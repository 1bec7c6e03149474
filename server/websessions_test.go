package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"netdisk/testutil"
	"netdisk/web"
)

// browser is a signed-in page as the daemons see it: its cookie and CSRF
// token, sent to whichever node it asks.
type browser struct {
	t      *testing.T
	cookie string
	csrf   string
}

func (b *browser) do(d *testutil.Daemon, method, path string, body []byte) int {
	b.t.Helper()
	hdr := map[string]string{"Cookie": web.CookieName + "=" + b.cookie, web.CSRFHeader: b.csrf, web.PageHeader: "1"}
	if body != nil {
		hdr["Content-Type"] = "application/json"
	}
	resp, err := d.Do(context.Background(), method, path, "", "", body, hdr)
	if err != nil {
		b.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func signIn(t *testing.T, d *testutil.Daemon, name, pass string) *browser {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name, "password": pass})
	resp, err := d.Do(context.Background(), "POST", "/web/login", "", "", body, map[string]string{"Content-Type": "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ CSRF string }
	json.NewDecoder(resp.Body).Decode(&s)
	b := &browser{t: t, csrf: s.CSRF}
	for _, c := range resp.Cookies() {
		if c.Name == web.CookieName {
			b.cookie = c.Value
		}
	}
	if resp.StatusCode != 200 || b.cookie == "" || b.csrf == "" {
		t.Fatalf("sign-in of %s through %s: %d", name, d.Addr, resp.StatusCode)
	}
	return b
}

// Two nodes on one PostgreSQL know the same web sessions: a browser signed
// in through one is signed in through the other, and every end — sign-out,
// a new password, the user's deletion — made through one node holds on
// both. So does the end of the old password's remembered Basic
// credentials, at the next request.
func TestWebSessionsAcrossNodes(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	r := testutil.StartRedis(t)
	shared := []string{"--meta", pg.NewDatabase(t), "--redis", r.URL, "--log-level", "warn"}
	a, b := testutil.StartDaemon(t, shared...), testutil.StartDaemon(t, shared...)
	nodes := []*testutil.Daemon{a, b}
	admin := func(d *testutil.Daemon, method, path, body string) {
		t.Helper()
		if code, out := fetch(t, d, method, path, "admin", d.AdminPass, []byte(body)); code >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, code, out)
		}
	}
	admin(a, "POST", "/api/v1/admin/users", `{"name":"carol","password":"carol-pass-1"}`)

	// Signed in through A, the browser is signed in through B, and a
	// sign-out through B ends it on A.
	c := signIn(t, a, "carol", "carol-pass-1")
	for _, d := range nodes {
		if code := c.do(d, "GET", "/web/session", nil); code != 200 {
			t.Fatalf("session through %s: %d, want 200", d.Addr, code)
		}
		if code := c.do(d, "GET", "/api/v1/quota", nil); code != 200 {
			t.Fatalf("API through %s with the cookie: %d, want 200", d.Addr, code)
		}
	}
	if code := c.do(b, "POST", "/web/logout", nil); code != http.StatusNoContent {
		t.Fatalf("sign-out through B: %d", code)
	}
	for _, d := range nodes {
		if code := c.do(d, "GET", "/api/v1/quota", nil); code != 401 {
			t.Fatalf("after signing out through B, through %s: %d, want 401", d.Addr, code)
		}
	}

	// A new password set through B ends the sessions made through A and B,
	// and the old password that A remembers.
	c1, c2 := signIn(t, a, "carol", "carol-pass-1"), signIn(t, b, "carol", "carol-pass-1")
	if code, _ := fetch(t, a, "GET", "/api/v1/quota", "carol", "carol-pass-1", nil); code != 200 {
		t.Fatalf("Basic auth through A: %d", code)
	}
	admin(b, "PUT", "/api/v1/admin/users/carol/password", `{"password":"carol-pass-2"}`)
	for _, s := range []*browser{c1, c2} {
		for _, d := range nodes {
			if code := s.do(d, "GET", "/api/v1/quota", nil); code != 401 {
				t.Fatalf("a session after the new password, through %s: %d, want 401", d.Addr, code)
			}
		}
	}
	// A confirmed the old password just before; on a shared store it
	// confirms again on every use, so it refuses it at once.
	if code, _ := fetch(t, a, "GET", "/api/v1/quota", "carol", "carol-pass-1", nil); code != 401 {
		t.Fatalf("the old password through A right after the change through B: %d, want 401", code)
	}
	if code, _ := fetch(t, a, "GET", "/api/v1/quota", "carol", "carol-pass-2", nil); code != 200 {
		t.Fatalf("the new password through A: %d, want 200", code)
	}

	// Deleting carol through A ends her session made through B; carol
	// created again is a new account that the old cookie does not open.
	c3 := signIn(t, b, "carol", "carol-pass-2")
	admin(a, "DELETE", "/api/v1/admin/users/carol", "")
	admin(a, "POST", "/api/v1/admin/users", `{"name":"carol","password":"carol-pass-2"}`)
	for _, d := range nodes {
		if code := c3.do(d, "GET", "/api/v1/quota", nil); code != 401 {
			t.Fatalf("the deleted carol's session through %s: %d, want 401", d.Addr, code)
		}
	}
}
