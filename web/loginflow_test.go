package web

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
)

// flowsOn returns flows kept in a fresh SQLite store on clock, and the ids
// of two users who can grant.
func flowsOn(t *testing.T, clock *testutil.Clock) (*LoginFlows, int64, int64) {
	t.Helper()
	ctx := context.Background()
	s, err := meta.OpenSQLite(ctx, filepath.Join(t.TempDir(), "meta.db"), clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	a, err := s.CreateUser(ctx, "alice", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.CreateUser(ctx, "mallory", "h", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	return NewLoginFlows(s, clock.Now), a.ID, m.ID
}

// mintAs answers a poll's mint with name and pass, recording whom for.
func mintAs(name, pass string, got *int64) func(int64, string) (string, string, error) {
	return func(uid int64, _ string) (string, string, error) {
		*got = uid
		return name, pass, nil
	}
}

// TestLoginFlowLifecycle: a flow's poll is 404 while pending, answers once
// when granted (minting for the granting user then) and is 404 after; the
// login token cannot be polled nor the poll token granted; a flow expires
// on the clock (20 minutes), granted or not; and every unknown token is the
// same 404 as a pending one.
func TestLoginFlowLifecycle(t *testing.T) {
	ctx := context.Background()
	clock := testutil.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f, alice, mallory := flowsOn(t, clock)
	var minted int64
	mint := mintAs("alice", "ndt_secret", &minted)
	poll, login, err := f.Start(ctx, "Nextcloud desktop", "http://drive.example")
	if err != nil {
		t.Fatal(err)
	}
	if poll == login || len(poll) < 22 || len(login) < 22 { // 22 base64 characters: 128 bits
		t.Fatalf("tokens %q and %q: want two different secrets of at least 128 bits", poll, login)
	}
	if _, err := f.Poll(ctx, "a", poll, mint); !errs.Is(err, errs.NotFound) || minted != 0 {
		t.Fatalf("poll before the grant: %v (minted for %d), want NotFound", err, minted)
	}
	if dev, err := f.Device(ctx, login); err != nil || dev != "Nextcloud desktop" {
		t.Fatalf("device: %q %v", dev, err)
	}
	// Each token does its own half only.
	if _, err := f.Poll(ctx, "a", login, mint); !errs.Is(err, errs.NotFound) {
		t.Fatalf("polling with the login token: %v, want NotFound", err)
	}
	if err := f.Grant(ctx, poll, mallory); !errs.Is(err, errs.NotFound) {
		t.Fatalf("granting with the poll token: %v, want NotFound", err)
	}
	if err := f.Grant(ctx, login, alice); err != nil {
		t.Fatal(err)
	}
	if err := f.Grant(ctx, login, mallory); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a second grant: %v, want NotFound", err)
	}
	if _, err := f.Device(ctx, login); !errs.Is(err, errs.NotFound) {
		t.Fatalf("device of a granted flow: %v, want NotFound", err)
	}
	got, err := f.Poll(ctx, "a", poll, mint)
	if err != nil || got != (PollResult{Server: "http://drive.example", LoginName: "alice", AppPassword: "ndt_secret"}) || minted != alice {
		t.Fatalf("poll after the grant: %+v %v (minted for %d)", got, err, minted)
	}
	if _, err := f.Poll(ctx, "a", poll, mint); !errs.Is(err, errs.NotFound) {
		t.Fatalf("second poll: %v, want NotFound (the flow is consumed)", err)
	}

	// Expiry, on the injected clock, of a pending and of a granted flow.
	p1, l1, _ := f.Start(ctx, "one", "s")
	p2, l2, _ := f.Start(ctx, "two", "s")
	if err := f.Grant(ctx, l2, alice); err != nil {
		t.Fatal(err)
	}
	clock.Advance(LoginFlowTTL - time.Second)
	if _, err := f.Device(ctx, l1); err != nil {
		t.Fatalf("a flow a second before its expiry: %v", err)
	}
	clock.Advance(time.Second)
	if _, err := f.Device(ctx, l1); !errs.Is(err, errs.NotFound) {
		t.Fatalf("device of an expired flow: %v", err)
	}
	if err := f.Grant(ctx, l1, alice); !errs.Is(err, errs.NotFound) {
		t.Fatalf("grant of an expired flow: %v, want NotFound", err)
	}
	for _, p := range []string{p1, p2} {
		if _, err := f.Poll(ctx, "a", p, mint); !errs.Is(err, errs.NotFound) {
			t.Fatalf("poll of an expired flow: %v, want NotFound", err)
		}
	}
	for _, tok := range []string{"", "x", strings.Repeat("A", 43), randomToken()} {
		if _, err := f.Poll(ctx, "b", tok, mint); err != errNoFlow {
			t.Fatalf("poll of %q: %v, want the very error of a pending flow", tok, err)
		}
	}
}

// TestLoginFlowThrottle: an address polling unknown tokens is refused (429)
// after pollMissLimit of them in a window, another address and a pending
// flow's own polls are not; the window passes on the clock. Starting flows
// stops at the cap until some expire.
func TestLoginFlowThrottle(t *testing.T) {
	ctx := context.Background()
	clock := testutil.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f, alice, _ := flowsOn(t, clock)
	var minted int64
	mint := mintAs("u", "p", &minted)
	poll, login, _ := f.Start(ctx, "dev", "s")
	for i := range pollMissLimit {
		if _, err := f.Poll(ctx, "10.0.0.1", fmt.Sprint("guess", i), mint); !errs.Is(err, errs.NotFound) {
			t.Fatalf("guess %d: %v, want NotFound", i, err)
		}
	}
	if _, err := f.Poll(ctx, "10.0.0.1", "guess-more", mint); !errs.Is(err, errs.Throttled) {
		t.Fatalf("guess beyond the limit: %v, want Throttled", err)
	}
	for range 3 * pollMissLimit {
		if _, err := f.Poll(ctx, "10.0.0.2", poll, mint); !errs.Is(err, errs.NotFound) {
			t.Fatalf("a pending flow's polls: %v, want NotFound, never Throttled", err)
		}
	}
	clock.Advance(pollMissWindow)
	if err := f.Grant(ctx, login, alice); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Poll(ctx, "10.0.0.1", poll, mint); err != nil {
		t.Fatalf("the throttled address after the window: %v", err)
	}

	f.Max = 3
	for i := range 3 {
		if _, _, err := f.Start(ctx, "d", "s"); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	if _, _, err := f.Start(ctx, "d", "s"); !errs.Is(err, errs.Throttled) {
		t.Fatalf("start beyond the cap: %v, want Throttled", err)
	}
	clock.Advance(LoginFlowTTL)
	if _, _, err := f.Start(ctx, "d", "s"); err != nil {
		t.Fatalf("start once the others expired: %v", err)
	}
}

// TestDeviceName: a User-Agent becomes a valid token name whatever it is.
func TestDeviceName(t *testing.T) {
	for _, ua := range []string{"", "  ", "\x00\x01", "Mozilla/5.0 (Linux) mirall/3.7.3 (Nextcloud, debian-6.1 ClientArchitecture: x86_64 OsArchitecture: x86_64)",
		strings.Repeat("é", 60), "a\tb\nc", "<img src=x onerror=alert(1)>"} {
		n := deviceName(ua)
		if err := validTokenName(n + " (1000)"); err != nil {
			t.Errorf("deviceName(%q) = %q: %v", ua, n, err)
		}
	}
}

var validTokenName = drive.ValidTokenName
