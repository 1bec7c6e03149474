package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"netdisk/server"
	"netdisk/testutil"
)

// Two nodes on one PostgreSQL know the same app tokens: one made through A
// signs in through B, and one revoked through B is refused through A on
// the very next request (tokens are looked up on every use, never cached).
// A password changed by its user through B ends the sessions made through
// A and the old password there at once, and the token keeps working.
func TestAppTokensAcrossNodes(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	r := testutil.StartRedis(t)
	shared := []string{"--meta", pg.NewDatabase(t), "--redis", r.URL, "--log-level", "warn"}
	a, b := testutil.StartDaemon(t, shared...), testutil.StartDaemon(t, shared...)
	if code, out := fetch(t, a, "POST", "/api/v1/admin/users", "admin", a.AdminPass, []byte(`{"name":"carol","password":"carol-pass-1"}`)); code != http.StatusCreated {
		t.Fatalf("add carol: %d %s", code, out)
	}
	code, out := fetch(t, a, "POST", "/api/v1/account/tokens", "carol", "carol-pass-1", []byte(`{"name":"mount"}`))
	var tok struct{ Token string }
	if code != http.StatusCreated || json.Unmarshal([]byte(out), &tok) != nil || tok.Token == "" {
		t.Fatalf("make a token through A: %d %s", code, out)
	}
	for _, d := range []*testutil.Daemon{a, b} {
		if code, _ := fetch(t, d, "PROPFIND", "/dav/", "carol", tok.Token, nil); code != http.StatusMultiStatus {
			t.Fatalf("the token through %s: %d, want 207", d.Addr, code)
		}
	}

	// The web page signs in with the password only: a session made from a
	// token would know nothing of it.
	body, _ := json.Marshal(map[string]string{"name": "carol", "password": tok.Token})
	resp, err := b.Do(context.Background(), "POST", "/web/login", "", "", body, map[string]string{"Content-Type": "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("web sign-in with a token: %d, cookies %v; want 403 and none", resp.StatusCode, resp.Cookies())
	}

	s := signIn(t, a, "carol", "carol-pass-1")
	// A remembers carol's password (drive.AuthenticateCached) from here.
	if code, _ := fetch(t, a, "PROPFIND", "/dav/", "carol", "carol-pass-1", nil); code != http.StatusMultiStatus {
		t.Fatalf("carol's password through A: %d", code)
	}
	if code, out := fetch(t, b, "PUT", "/api/v1/account/password", "carol", "carol-pass-1", []byte(`{"old":"carol-pass-1","new":"carol-pass-2"}`)); code != http.StatusNoContent {
		t.Fatalf("carol's new password through B: %d %s", code, out)
	}
	if code := s.do(a, "GET", "/api/v1/quota", nil); code != http.StatusUnauthorized {
		t.Fatalf("the session made through A after the change through B: %d, want 401", code)
	}
	if code, _ := fetch(t, a, "PROPFIND", "/dav/", "carol", "carol-pass-1", nil); code != http.StatusUnauthorized {
		t.Fatalf("the old password through A right after the change through B: %d, want 401", code)
	}
	if code, _ := fetch(t, a, "PROPFIND", "/dav/", "carol", tok.Token, nil); code != http.StatusMultiStatus {
		t.Fatalf("the token after the new password: %d, want 207", code)
	}

	if code, out := fetch(t, b, "DELETE", "/api/v1/account/tokens/mount", "carol", "carol-pass-2", nil); code != http.StatusNoContent {
		t.Fatalf("revoke through B: %d %s", code, out)
	}
	if code, _ := fetch(t, a, "PROPFIND", "/dav/", "carol", tok.Token, nil); code != http.StatusUnauthorized {
		t.Fatalf("the revoked token through A right after: %d, want 401", code)
	}
}

// The current password a password change gives is a sign-in under the
// throttle: a browser left signed in cannot be used to guess it. Each wrong
// one is 403 and a failed login of the user from that address; after
// PairLimit of them the right one gets 429 too, as does Basic auth. An app
// token given as the current password is refused.
func TestPasswordChangeThrottled(t *testing.T) {
	d := testutil.StartDaemon(t, "--log-level", "warn")
	if code, out := fetch(t, d, "POST", "/api/v1/admin/users", "admin", d.AdminPass, []byte(`{"name":"carol","password":"carol-pass-1"}`)); code != http.StatusCreated {
		t.Fatalf("add carol: %d %s", code, out)
	}
	code, out := fetch(t, d, "POST", "/api/v1/account/tokens", "carol", "carol-pass-1", []byte(`{"name":"t"}`))
	var tok struct{ Token string }
	if code != http.StatusCreated || json.Unmarshal([]byte(out), &tok) != nil {
		t.Fatalf("make a token: %d %s", code, out)
	}
	s := signIn(t, d, "carol", "carol-pass-1")
	change := func(old string) int {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"old": old, "new": "carol-pass-2"})
		return s.do(d, "PUT", "/api/v1/account/password", body)
	}
	if code := change(tok.Token); code != http.StatusForbidden {
		t.Fatalf("a token as the current password: %d, want 403", code)
	}
	for i := range server.PairLimit {
		if code := change("guess-" + strconv.Itoa(i)); code != http.StatusForbidden {
			t.Fatalf("wrong current password %d: %d, want 403", i+1, code)
		}
	}
	if code := change("carol-pass-1"); code != http.StatusTooManyRequests {
		t.Fatalf("the right current password after %d wrong ones: %d, want 429", server.PairLimit, code)
	}
	if code, _ := fetch(t, d, "PROPFIND", "/dav/", "carol", "carol-pass-1", nil); code != http.StatusTooManyRequests {
		t.Fatalf("Basic auth after the guesses: %d, want 429", code)
	}
}
