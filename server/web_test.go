package server

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
	"netdisk/web"
)

// webClient is a browser-like client: it keeps the session cookie and sends
// the CSRF token it was given at sign-in.
type webClient struct {
	t      *testing.T
	base   string
	cookie *http.Cookie
	csrf   string
}

func (c *webClient) do(method, path string, body []byte, hdr map[string]string) (*http.Response, []byte) {
	c.t.Helper()
	req, _ := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if c.cookie != nil {
		req.AddCookie(c.cookie)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (c *webClient) login(name, pass string, hdr map[string]string) (*http.Response, []byte) {
	c.t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name, "password": pass})
	h := map[string]string{"Content-Type": "application/json"}
	for k, v := range hdr {
		h[k] = v
	}
	resp, b := c.do("POST", "/web/login", body, h)
	for _, ck := range resp.Cookies() {
		if ck.Name == web.CookieName {
			c.cookie = ck
		}
	}
	var s struct{ CSRF string }
	json.Unmarshal(b, &s)
	c.csrf = s.CSRF
	return resp, b
}

func signedIn(t *testing.T, hs *httptest.Server) *webClient {
	t.Helper()
	c := &webClient{t: t, base: hs.URL}
	if resp, b := c.login("alice", "pw-alice", nil); resp.StatusCode != 200 || c.cookie == nil || c.csrf == "" {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, b)
	}
	return c
}

// TestWebAssets: the page and its assets come from the binary with their
// types, a validator, no-cache (revalidate: a new binary's page never runs
// an old cached worker) and a CSP that loads nothing from elsewhere.
func TestWebAssets(t *testing.T) {
	_, hs := newTestServer(t, testutil.NewClock(time.Unix(1_800_000_000, 0)))
	c := &webClient{t: t, base: hs.URL}
	for _, a := range []struct{ path, ctype, contains string }{
		{"/", "text/html; charset=utf-8", `autocomplete="current-password"`},
		{"/static/app.js", "text/javascript; charset=utf-8", "import"},
		{"/static/upload-worker.js", "text/javascript; charset=utf-8", "QueueDrained"},
		{"/static/vendor/spark-md5.min.js", "text/javascript; charset=utf-8", "SparkMD5"},
		{"/static/app.css", "text/css; charset=utf-8", ".files"},
		{"/static/logo.svg", "image/svg+xml", "<svg"},
	} {
		resp, b := c.do("GET", a.path, nil, nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != a.ctype || !strings.Contains(string(b), a.contains) {
			t.Fatalf("GET %s: %d %q (%d bytes)", a.path, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
		}
		if resp.Header.Get("Cache-Control") != "no-cache" || resp.Header.Get("ETag") == "" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("GET %s: caching headers %v", a.path, resp.Header)
		}
		if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Fatalf("GET %s: CSP %q", a.path, resp.Header.Get("Content-Security-Policy"))
		}
		resp, b = c.do("GET", a.path, nil, map[string]string{"If-None-Match": resp.Header.Get("ETag")})
		if resp.StatusCode != 304 || len(b) != 0 {
			t.Fatalf("GET %s revalidated: %d, %d bytes", a.path, resp.StatusCode, len(b))
		}
	}
	if resp, _ := c.do("GET", "/static/nope.js", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("missing asset: %d", resp.StatusCode)
	}
	if resp, _ := c.do("GET", "/nope", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("unknown page: %d", resp.StatusCode)
	}
}

// TestWebSessionCookie: sign-in sets an HttpOnly, SameSite=Strict cookie,
// Secure only over TLS (or behind a trusted proxy saying https); the cookie
// authenticates the API; a wrong password is 401 without WWW-Authenticate
// (no browser dialog over the page); sign-out ends the session.
func TestWebSessionCookie(t *testing.T) {
	_, hs := newTestServer(t, testutil.NewClock(time.Unix(1_800_000_000, 0)))
	bad := &webClient{t: t, base: hs.URL}
	resp, b := bad.login("alice", "wrong", nil)
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "" || bad.cookie != nil || !strings.Contains(string(b), `"code":"unauthenticated"`) {
		t.Fatalf("wrong password: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
	}
	c := signedIn(t, hs)
	if !c.cookie.HttpOnly || c.cookie.SameSite != http.SameSiteStrictMode || c.cookie.Secure || c.cookie.Path != "/" || c.cookie.MaxAge <= 0 {
		t.Fatalf("cookie flags: %+v", c.cookie)
	}
	// X-Forwarded-Proto counts only from a trusted proxy (proxy_test.go):
	// this client is none.
	tls := &webClient{t: t, base: hs.URL}
	tls.login("alice", "pw-alice", map[string]string{"X-Forwarded-Proto": "https"})
	if tls.cookie == nil || tls.cookie.Secure {
		t.Fatalf("X-Forwarded-Proto from an untrusted peer made the cookie Secure: %+v", tls.cookie)
	}
	if resp, b := c.do("GET", "/web/session", nil, nil); resp.StatusCode != 200 || !strings.Contains(string(b), `"name":"alice"`) || !strings.Contains(string(b), c.csrf) {
		t.Fatalf("session: %d %s", resp.StatusCode, b)
	}
	if resp, b := c.do("GET", "/api/v1/fs/list?path=/", nil, nil); resp.StatusCode != 200 || !strings.Contains(string(b), `"entries"`) {
		t.Fatalf("list with cookie: %d %s", resp.StatusCode, b)
	}
	// Sign-out needs the token too (a cross-site page cannot sign you out).
	if resp, _ := c.do("POST", "/web/logout", nil, nil); resp.StatusCode != 403 {
		t.Fatalf("sign-out without CSRF token: %d", resp.StatusCode)
	}
	resp, _ = c.do("POST", "/web/logout", nil, map[string]string{web.CSRFHeader: c.csrf})
	if resp.StatusCode != 204 {
		t.Fatalf("sign-out: %d", resp.StatusCode)
	}
	if ck := resp.Cookies(); len(ck) != 1 || ck[0].MaxAge >= 0 {
		t.Fatalf("sign-out must clear the cookie: %+v", ck)
	}
	resp, b = c.do("GET", "/api/v1/fs/list?path=/", nil, nil)
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != "" || !strings.Contains(string(b), "sign in again") {
		t.Fatalf("after sign-out: %d %q %s", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
	}
}

// TestWebCSRF: a state-changing request made with the cookie needs the
// session's token; reads do not; sign-in wants JSON from the same origin.
func TestWebCSRF(t *testing.T) {
	_, hs := newTestServer(t, testutil.NewClock(time.Unix(1_800_000_000, 0)))
	c := signedIn(t, hs)
	mk := []byte(`{"path":"/docs"}`)
	for _, tok := range []string{"", "wrong", c.csrf + "x"} {
		resp, b := c.do("POST", "/api/v1/fs/mkdir", mk, map[string]string{"Content-Type": "application/json", web.CSRFHeader: tok})
		if resp.StatusCode != 403 || !strings.Contains(string(b), "CSRF") {
			t.Fatalf("mkdir with token %q: %d %s", tok, resp.StatusCode, b)
		}
	}
	if resp, b := c.do("GET", "/api/v1/fs/stat?path=/docs", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("a refused mkdir created the folder: %d %s", resp.StatusCode, b)
	}
	if resp, b := c.do("POST", "/api/v1/fs/mkdir", mk, map[string]string{"Content-Type": "application/json", web.CSRFHeader: c.csrf}); resp.StatusCode != 201 {
		t.Fatalf("mkdir with token: %d %s", resp.StatusCode, b)
	}
	// The cookie writes nothing through WebDAV: only GET and HEAD (downloads)
	// take it there, the rest wants Basic credentials, as from any client.
	resp, _ := c.do("PUT", "/dav/x.txt", []byte("x"), map[string]string{web.CSRFHeader: c.csrf})
	if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("PUT /dav/ with cookie: %d", resp.StatusCode)
	}
	// Cross-site sign-in attempts.
	x := &webClient{t: t, base: hs.URL}
	if resp, _ := x.do("POST", "/web/login", []byte("name=alice&password=pw-alice"), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}); resp.StatusCode != 415 {
		t.Fatalf("form sign-in: %d", resp.StatusCode)
	}
	if resp, _ := x.login("alice", "pw-alice", map[string]string{"Origin": "https://evil.example"}); resp.StatusCode != 403 || x.cookie != nil {
		t.Fatalf("cross-origin sign-in: %d", resp.StatusCode)
	}
	if resp, _ := x.login("alice", "pw-alice", map[string]string{"Origin": hs.URL}); resp.StatusCode != 200 {
		t.Fatalf("same-origin sign-in: %d", resp.StatusCode)
	}
}

// TestWebBasicUnchanged: Basic credentials decide alone when present (a
// stale cookie beside them changes nothing), and without any credentials
// /api/ and /dav/ answer 401 with WWW-Authenticate, as to any client.
func TestWebBasicUnchanged(t *testing.T) {
	_, hs := newTestServer(t, testutil.NewClock(time.Unix(1_800_000_000, 0)))
	if code, _, h := get(t, hs.URL+"/api/v1/quota", "", ""); code != 401 || h.Get("WWW-Authenticate") == "" {
		t.Fatalf("no credentials: %d", code)
	}
	if code, _, _ := get(t, hs.URL+"/api/v1/quota", "alice", "pw-alice"); code != 200 {
		t.Fatalf("Basic: %d", code)
	}
	req, _ := http.NewRequest("POST", hs.URL+"/api/v1/fs/mkdir", strings.NewReader(`{"path":"/b"}`))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("alice", "pw-alice")
	req.AddCookie(&http.Cookie{Name: web.CookieName, Value: "stale"})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("Basic with a stale cookie and no CSRF token: %d, want 201", resp.StatusCode)
	}
}

// TestWebThrottle: the page's sign-in shares Basic auth's throttle: failures
// by either count, and a locked-out sign-in is 429 with Retry-After even
// with the right password.
func TestWebThrottle(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	_, hs := newTestServer(t, clock)
	c := &webClient{t: t, base: hs.URL}
	for i := range PairLimit {
		if i%2 == 0 {
			get(t, hs.URL+"/dav/", "alice", "wrong")
		} else if resp, _ := c.login("alice", "wrong", nil); resp.StatusCode != 401 {
			t.Fatalf("failure %d: %d", i, resp.StatusCode)
		}
	}
	resp, _ := c.login("alice", "pw-alice", nil)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || c.cookie != nil {
		t.Fatalf("locked out sign-in: %d %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	clock.Advance(LockBase + time.Second)
	if resp, _ := c.login("alice", "pw-alice", nil); resp.StatusCode != 200 {
		t.Fatalf("after the lockout: %d", resp.StatusCode)
	}
}

// TestWebSessionExpiry: idle and absolute expiry, on the injected clock.
func TestWebSessionExpiry(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	s, hs := newTestServer(t, clock)
	ss := s.Web().Sessions()
	ss.Idle, ss.Absolute = time.Hour, 3*time.Hour

	idle := signedIn(t, hs)
	clock.Advance(time.Hour - time.Second)
	if resp, _ := idle.do("GET", "/api/v1/quota", nil, nil); resp.StatusCode != 200 {
		t.Fatalf("used within the idle time: %d", resp.StatusCode)
	}
	clock.Advance(time.Hour)
	if resp, _ := idle.do("GET", "/api/v1/quota", nil, nil); resp.StatusCode != 401 {
		t.Fatalf("idle past the limit: %d", resp.StatusCode)
	}

	busy := signedIn(t, hs)
	for range 4 { // used every 40 minutes: idle never expires it, the absolute limit does
		clock.Advance(40 * time.Minute)
		if resp, _ := busy.do("GET", "/api/v1/quota", nil, nil); resp.StatusCode != 200 {
			t.Fatalf("busy session before the absolute limit: %d", resp.StatusCode)
		}
	}
	clock.Advance(40 * time.Minute)
	if resp, _ := busy.do("GET", "/api/v1/quota", nil, nil); resp.StatusCode != 401 {
		t.Fatalf("busy session past the absolute limit: %d", resp.StatusCode)
	}
	// The lookups ended both: nothing is left for the janitor.
	if n, err := ss.Prune(context.Background()); err != nil || n != 0 {
		t.Fatalf("expired sessions kept: %d (%v)", n, err)
	}
}

// TestWebSessionsBoundedAndEnded: a user's sessions are bounded (a sign-in
// beyond the bound ends the oldest); a new password ends every one of them
// and the old password's remembered Basic credentials; deleting the user
// ends them too, and an account created again under the same name is a new
// account that no old cookie opens.
func TestWebSessionsBoundedAndEnded(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	s, hs := newTestServer(t, clock)
	ctx := context.Background()
	s.Web().Sessions().MaxPerUser = 3
	status := func(c *webClient) int {
		t.Helper()
		resp, _ := c.do("GET", "/api/v1/quota", nil, nil)
		return resp.StatusCode
	}
	var cs []*webClient
	for range 4 {
		clock.Advance(time.Second)
		cs = append(cs, signedIn(t, hs))
	}
	for i, c := range cs {
		if want := map[bool]int{true: 401, false: 200}[i == 0]; status(c) != want {
			t.Fatalf("session %d of 4 with a bound of 3: %d, want %d", i+1, status(c), want)
		}
	}
	if code, _, _ := get(t, hs.URL+"/api/v1/quota", "alice", "pw-alice"); code != 200 {
		t.Fatalf("Basic auth before the change: %d", code)
	}

	if err := s.d.SetPassword(ctx, "alice", "pw-alice-2"); err != nil {
		t.Fatal(err)
	}
	for i, c := range cs {
		if code := status(c); code != 401 {
			t.Fatalf("session %d after a new password: %d, want 401", i+1, code)
		}
	}
	if code, _, _ := get(t, hs.URL+"/api/v1/quota", "alice", "pw-alice"); code != 401 {
		t.Fatalf("the old password (remembered) after the change: %d, want 401", code)
	}

	c := &webClient{t: t, base: hs.URL}
	if resp, b := c.login("alice", "pw-alice-2", nil); resp.StatusCode != 200 {
		t.Fatalf("sign-in with the new password: %d %s", resp.StatusCode, b)
	}
	old, err := s.d.User(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.d.DeleteUser(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if code := status(c); code != 401 {
		t.Fatalf("session of a deleted user: %d, want 401", code)
	}
	again, err := s.d.AddUser(ctx, "alice", "pw-alice-2", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID == old.ID {
		t.Fatalf("the new alice got the deleted alice's id %d", old.ID)
	}
	if code := status(c); code != 401 {
		t.Fatalf("the deleted alice's cookie on the new alice: %d, want 401", code)
	}
}

// TestWebZip: a folder downloads as a zip stream holding its tree.
func TestWebZip(t *testing.T) {
	_, hs := newTestServer(t, testutil.NewClock(time.Unix(1_800_000_000, 0)))
	files := map[string]string{"/d/a.txt": "alpha\n", "/d/sub/b.bin": strings.Repeat("b", 200000), "/d/sub/deeper/c": ""}
	for _, dir := range []string{"/d", "/d/sub", "/d/sub/deeper", "/d/empty"} {
		req, _ := http.NewRequest("MKCOL", hs.URL+"/dav"+dir, nil)
		req.SetBasicAuth("alice", "pw-alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("MKCOL %s: %v %v", dir, err, resp)
		}
		resp.Body.Close()
	}
	for p, body := range files {
		req, _ := http.NewRequest("PUT", hs.URL+"/dav"+p, strings.NewReader(body))
		req.SetBasicAuth("alice", "pw-alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("PUT %s: %v %v", p, err, resp)
		}
		resp.Body.Close()
	}
	c := signedIn(t, hs)
	resp, b := c.do("GET", "/web/zip?path=/d", nil, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/zip" || !strings.Contains(resp.Header.Get("Content-Disposition"), "d.zip") {
		t.Fatalf("zip: %d %v", resp.StatusCode, resp.Header)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		got[f.Name] = string(data)
	}
	want := map[string]string{"d/": "", "d/a.txt": "alpha\n", "d/empty/": "", "d/sub/": "", "d/sub/b.bin": files["/d/sub/b.bin"], "d/sub/deeper/": "", "d/sub/deeper/c": ""}
	if len(got) != len(want) {
		t.Fatalf("zip entries %d, want %d: %v", len(got), len(want), keys(got))
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("zip entry %q: present %v, %d bytes, want %d", k, ok, len(g), len(v))
		}
	}
	if resp, _ := c.do("GET", "/web/zip?path=/d/a.txt", nil, nil); resp.StatusCode != 409 {
		t.Fatalf("zip of a file: %d", resp.StatusCode)
	}
	if resp, _ := c.do("GET", "/web/zip?path=/nope", nil, nil); resp.StatusCode != 404 {
		t.Fatalf("zip of nothing: %d", resp.StatusCode)
	}
	if code, _, _ := get(t, hs.URL+"/web/zip?path=/d", "", ""); code != 401 {
		t.Fatalf("anonymous zip: %d", code)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestWebZipSymlinks: a link in a zipped folder stays a link (mode and
// body the target), which unzip recreates, and is never followed.
func TestWebZipSymlinks(t *testing.T) {
	s, hs := newTestServer(t, testutil.NewClock(time.Unix(1_800_000_000, 0)))
	ctx := context.Background()
	u, err := s.d.User(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.d.Mkdir(ctx, u.ID, "/d"); err != nil {
		t.Fatal(err)
	}
	for p, target := range map[string]string{"/d/rel": "../x", "/d/abs": "/etc/passwd"} {
		if _, err := s.d.Symlink(ctx, u.ID, p, target); err != nil {
			t.Fatal(err)
		}
	}
	c := signedIn(t, hs)
	resp, b := c.do("GET", "/web/zip?path=/d", nil, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("zip: %d", resp.StatusCode)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range zr.File {
		if f.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(rc)
		rc.Close()
		got[f.Name] = string(data)
	}
	if len(got) != 2 || got["d/rel"] != "../x" || got["d/abs"] != "/etc/passwd" {
		t.Fatalf("links in the zip: %v", got)
	}
}
