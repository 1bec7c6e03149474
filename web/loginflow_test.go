package web

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/testutil"
)

func grantWith(name, pass string) func(string) (string, string, error) {
	return func(string) (string, string, error) { return name, pass, nil }
}

// TestLoginFlowLifecycle: a flow's poll is 404 while pending, answers once
// when granted and is 404 after; the login token cannot be polled nor the
// poll token granted; a flow expires on the clock (20 minutes), granted or
// not; and every unknown token is the same 404 as a pending one.
func TestLoginFlowLifecycle(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f := NewLoginFlows(clock.Now)
	poll, login, err := f.Start("Nextcloud desktop", "http://drive.example")
	if err != nil {
		t.Fatal(err)
	}
	if poll == login || len(poll) < 22 || len(login) < 22 { // 22 base64 characters: 128 bits
		t.Fatalf("tokens %q and %q: want two different secrets of at least 128 bits", poll, login)
	}
	if _, err := f.Poll("a", poll); !errs.Is(err, errs.NotFound) {
		t.Fatalf("poll before the grant: %v, want NotFound", err)
	}
	if dev, err := f.Device(login); err != nil || dev != "Nextcloud desktop" {
		t.Fatalf("device: %q %v", dev, err)
	}
	// Each token does its own half only.
	if _, err := f.Poll("a", login); !errs.Is(err, errs.NotFound) {
		t.Fatalf("polling with the login token: %v, want NotFound", err)
	}
	if err := f.Grant(poll, grantWith("x", "y")); !errs.Is(err, errs.NotFound) {
		t.Fatalf("granting with the poll token: %v, want NotFound", err)
	}
	if err := f.Grant(login, grantWith("alice", "ndt_secret")); err != nil {
		t.Fatal(err)
	}
	if err := f.Grant(login, grantWith("mallory", "ndt_other")); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a second grant: %v, want NotFound", err)
	}
	if _, err := f.Device(login); !errs.Is(err, errs.NotFound) {
		t.Fatalf("device of a granted flow: %v, want NotFound", err)
	}
	got, err := f.Poll("a", poll)
	if err != nil || got != (PollResult{Server: "http://drive.example", LoginName: "alice", AppPassword: "ndt_secret"}) {
		t.Fatalf("poll after the grant: %+v %v", got, err)
	}
	if _, err := f.Poll("a", poll); !errs.Is(err, errs.NotFound) {
		t.Fatalf("second poll: %v, want NotFound (the flow is consumed)", err)
	}

	// Expiry, on the injected clock, of a pending and of a granted flow.
	p1, l1, _ := f.Start("one", "s")
	p2, l2, _ := f.Start("two", "s")
	if err := f.Grant(l2, grantWith("alice", "p")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(LoginFlowTTL - time.Second)
	if _, err := f.Device(l1); err != nil {
		t.Fatalf("a flow a second before its expiry: %v", err)
	}
	clock.Advance(time.Second)
	if _, err := f.Device(l1); !errs.Is(err, errs.NotFound) {
		t.Fatalf("device of an expired flow: %v", err)
	}
	if err := f.Grant(l1, grantWith("alice", "p")); !errs.Is(err, errs.NotFound) {
		t.Fatalf("grant of an expired flow: %v, want NotFound", err)
	}
	for _, p := range []string{p1, p2} {
		if _, err := f.Poll("a", p); !errs.Is(err, errs.NotFound) {
			t.Fatalf("poll of an expired flow: %v, want NotFound", err)
		}
	}
	for _, tok := range []string{"", "x", strings.Repeat("A", 43), randomToken()} {
		if _, err := f.Poll("b", tok); err != errNoFlow {
			t.Fatalf("poll of %q: %v, want the very error of a pending flow", tok, err)
		}
	}
}

// TestLoginFlowThrottle: an address polling unknown tokens is refused (429)
// after pollMissLimit of them in a window, another address and a pending
// flow's own polls are not; the window passes on the clock. Starting flows
// stops at the cap until some expire.
func TestLoginFlowThrottle(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	f := NewLoginFlows(clock.Now)
	poll, login, _ := f.Start("dev", "s")
	for i := range pollMissLimit {
		if _, err := f.Poll("10.0.0.1", fmt.Sprint("guess", i)); !errs.Is(err, errs.NotFound) {
			t.Fatalf("guess %d: %v, want NotFound", i, err)
		}
	}
	if _, err := f.Poll("10.0.0.1", "guess-more"); !errs.Is(err, errs.Throttled) {
		t.Fatalf("guess beyond the limit: %v, want Throttled", err)
	}
	for range 3 * pollMissLimit {
		if _, err := f.Poll("10.0.0.2", poll); !errs.Is(err, errs.NotFound) {
			t.Fatalf("a pending flow's polls: %v, want NotFound, never Throttled", err)
		}
	}
	clock.Advance(pollMissWindow)
	if err := f.Grant(login, grantWith("u", "p")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Poll("10.0.0.1", poll); err != nil {
		t.Fatalf("the throttled address after the window: %v", err)
	}

	f.Max = 3
	for i := range 3 {
		if _, _, err := f.Start("d", "s"); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	if _, _, err := f.Start("d", "s"); !errs.Is(err, errs.Throttled) {
		t.Fatalf("start beyond the cap: %v, want Throttled", err)
	}
	clock.Advance(LoginFlowTTL)
	if _, _, err := f.Start("d", "s"); err != nil {
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
