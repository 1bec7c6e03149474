package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"netdisk/drive/drivetest"
	"netdisk/testutil"
	"netdisk/web"
)

func TestParseTrustedProxies(t *testing.T) {
	got, err := ParseTrustedProxies(" 10.9.0.0/16, 192.0.2.7,::1 ,fd00::/8,")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.9.0.0/16", "192.0.2.7/32", "::1/128", "fd00::/8"}
	if len(got) != len(want) {
		t.Fatalf("parsed %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Fatalf("parsed %v, want %v", got, want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.1/x"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// TestForwardedHeadersOnlyFromTrustedProxies: X-Forwarded-For and
// X-Forwarded-Proto from a trusted proxy name the client (whose failures
// are throttled as its own, and whom the log names) and its TLS (the
// cookie is Secure); from any other peer they change nothing: the peer is
// throttled and logged, and the cookie is not Secure. A client cannot
// escape its lockout by writing X-Forwarded-For itself, through the proxy
// (which appends the address it saw) or around it.
func TestForwardedHeadersOnlyFromTrustedProxies(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	env := drivetest.New(t, drivetest.Options{Clock: clock})
	env.AddUser(t, "alice", 0)
	var logs testutil.SyncBuffer
	s := New(Config{Drive: env.Drive, Now: clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")}})
	send := func(peer, xff, proto, path, user, pass string) *httptest.ResponseRecorder {
		t.Helper()
		var r *http.Request
		if path == "/web/login" {
			r = httptest.NewRequest("POST", path, strings.NewReader(`{"name":"`+user+`","password":"`+pass+`"}`))
			r.Header.Set("Content-Type", "application/json")
		} else {
			r = httptest.NewRequest("GET", path, nil)
			r.SetBasicAuth(user, pass)
		}
		r.RemoteAddr = peer + ":40000"
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		if proto != "" {
			r.Header.Set("X-Forwarded-Proto", proto)
		}
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, r)
		return w
	}
	secure := func(w *httptest.ResponseRecorder) bool {
		t.Helper()
		for _, c := range w.Result().Cookies() {
			if c.Name == web.CookieName {
				return c.Secure
			}
		}
		t.Fatalf("sign-in: %d %s, no cookie", w.Code, w.Body)
		return false
	}
	const proxy, other = "10.9.0.1", "10.5.0.1"

	// Secure cookies: believed from the proxy only.
	if !secure(send(proxy, "203.0.113.1", "https", "/web/login", "alice", "pw-alice")) {
		t.Fatal("sign-in through the trusted proxy saying https: cookie not Secure")
	}
	if secure(send(other, "203.0.113.1", "https", "/web/login", "alice", "pw-alice")) {
		t.Fatal("sign-in from an untrusted peer saying https: cookie Secure")
	}
	if secure(send(proxy, "203.0.113.1", "", "/web/login", "alice", "pw-alice")) {
		t.Fatal("sign-in through the trusted proxy over plain HTTP: cookie Secure")
	}

	// Throttling and logs through the proxy: per client.
	for i := range PairLimit {
		// The client's own X-Forwarded-For entry comes first; the proxy
		// appends the address it saw.
		if w := send(proxy, "198.51.100."+strconv.Itoa(i)+", 203.0.113.5", "", "/api/v1/quota", "alice", "wrong"); w.Code != 401 {
			t.Fatalf("failure %d through the proxy: %d", i, w.Code)
		}
	}
	if w := send(proxy, "198.51.100.99, 203.0.113.5", "", "/api/v1/quota", "alice", "pw-alice"); w.Code != 429 {
		t.Fatalf("the locked-out client through the proxy, with a made-up X-Forwarded-For entry: %d, want 429", w.Code)
	}
	if w := send(proxy, "203.0.113.6", "", "/api/v1/quota", "alice", "pw-alice"); w.Code != 200 {
		t.Fatalf("another client through the same proxy: %d, want 200", w.Code)
	}
	if !strings.Contains(logs.String(), `msg="auth failed" user=alice addr=203.0.113.5`) {
		t.Fatalf("the log does not name the client behind the proxy:\n%s", logs.String())
	}

	// From an untrusted peer X-Forwarded-For changes nothing: its failures
	// are the peer's, whatever it claims.
	for i := range PairLimit {
		if w := send(other, "192.0.2."+strconv.Itoa(i), "", "/api/v1/quota", "alice", "wrong"); w.Code != 401 {
			t.Fatalf("failure %d from the untrusted peer: %d", i, w.Code)
		}
	}
	if w := send(other, "192.0.2.200", "", "/api/v1/quota", "alice", "pw-alice"); w.Code != 429 {
		t.Fatalf("the untrusted peer claiming another address: %d, want 429", w.Code)
	}
	if strings.Contains(logs.String(), "addr=192.0.2.") || !strings.Contains(logs.String(), `msg="auth failed" user=alice addr=`+other) {
		t.Fatalf("the log believed an untrusted X-Forwarded-For:\n%s", logs.String())
	}
	if w := send("10.5.0.2", "", "", "/api/v1/quota", "alice", "pw-alice"); w.Code != 200 {
		t.Fatalf("alice from a clean address: %d", w.Code)
	}
}
