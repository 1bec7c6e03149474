package server_test

import (
	"net/http"
	"strconv"
	"testing"

	"netdisk/server"
	"netdisk/testutil"
)

// sprayKeepsAdminIn is the attack of a client sharing its address with
// everyone (a reverse proxy): AddrLimit+1 logins with made-up names
// (curl -u nobodyN:bad …/dav/), spread over the nodes; then the admin, from
// the same address, signs in with the right password on every node, and
// further made-up names are refused there.
func sprayKeepsAdminIn(t *testing.T, nodes ...*testutil.Daemon) {
	for i := range server.AddrLimit + 1 {
		d := nodes[i%len(nodes)]
		code, _ := fetch(t, d, "PROPFIND", "/dav/", "nobody"+strconv.Itoa(i), "bad", nil)
		if want := map[bool]int{true: 401, false: 429}[i < server.AddrLimit]; code != want {
			t.Fatalf("made-up name %d through %s: %d, want %d", i, d.Addr, code, want)
		}
	}
	for _, d := range nodes {
		if code, _ := fetch(t, d, "PROPFIND", "/dav/", "admin", d.AdminPass, nil); code != http.StatusMultiStatus {
			t.Fatalf("the admin's right password through %s after the spray: %d, want 207", d.Addr, code)
		}
		if code, _ := fetch(t, d, "PROPFIND", "/dav/", "nobody-more", "bad", nil); code != http.StatusTooManyRequests {
			t.Fatalf("another made-up name through %s: %d, want 429", d.Addr, code)
		}
	}
}

// One daemon, throttle state in process.
func TestAddressSprayKeepsAdminIn(t *testing.T) {
	sprayKeepsAdminIn(t, testutil.StartDaemon(t))
}

// Two daemons sharing the throttle's counts in Redis.
func TestAddressSprayKeepsAdminInAcrossNodes(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	r := testutil.StartRedis(t)
	shared := []string{"--meta", pg.NewDatabase(t), "--redis", r.URL, "--log-level", "warn"}
	sprayKeepsAdminIn(t, testutil.StartDaemon(t, shared...), testutil.StartDaemon(t, shared...))
}
