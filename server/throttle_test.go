package server

import (
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"netdisk/testutil"
)

// throttleEnv drives the real server handler from chosen client addresses
// (httptest connections all come from 127.0.0.1).
type throttleEnv struct {
	t     *testing.T
	s     *Server
	clock *testutil.Clock
}

func newThrottleEnv(t *testing.T) *throttleEnv {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	// Unknown names (compared against a default-cost dummy hash) are avoided:
	// at the default cost under -race on a shared machine the tests took
	// minutes; drivetest hashes its users at bcrypt's minimum cost.
	s := newServer(t, clock, "alice", "mallory", "bob", "carol", "dave", "erin", "frank")
	return &throttleEnv{t: t, s: s, clock: clock}
}

// login sends GET /dav/ as user from addr and returns the status and Retry-After.
func (e *throttleEnv) login(addr, user, pass string) (int, string) {
	r := httptest.NewRequest("GET", "/dav/", nil)
	r.RemoteAddr = addr + ":40000"
	r.SetBasicAuth(user, pass)
	w := httptest.NewRecorder()
	e.s.Handler().ServeHTTP(w, r)
	return w.Code, w.Header().Get("Retry-After")
}

func (e *throttleEnv) want(code int, addr, user, pass string) string {
	e.t.Helper()
	got, ra := e.login(addr, user, pass)
	if (code == 200) != (got != 401 && got != 429 && got != 403) || code != 200 && got != code {
		e.t.Fatalf("%s as %s/%s: %d, want %d", addr, user, pass, got, code)
	}
	return ra
}

// TestThrottleInterleavedSuccessNoBypass: the attacker's own successful
// logins do not reset the failures of the account being guessed.
func TestThrottleInterleavedSuccessNoBypass(t *testing.T) {
	e := newThrottleEnv(t)
	const x = "10.0.0.1"
	for i := 0; i < PairLimit; i++ {
		e.want(401, x, "alice", "guess"+strconv.Itoa(i))
		e.want(200, x, "mallory", "pw-mallory")
	}
	// Locked: even the right password is not evaluated from x.
	if ra := e.want(429, x, "alice", "pw-alice"); ra != "30" {
		t.Fatalf("Retry-After %q, want 30", ra)
	}
	e.want(200, x, "mallory", "pw-mallory")      // own account unaffected
	e.want(200, x, "bob", "pw-bob")              // other account from the same address
	e.want(200, "10.0.0.2", "alice", "pw-alice") // the real user elsewhere
	// Retry-After counts down with the clock; after it one attempt is evaluated
	// and a wrong one doubles the lockout.
	e.clock.Advance(10 * time.Second)
	if ra := e.want(429, x, "ALICE", "pw-alice"); ra != "20" { // case folds: one account
		t.Fatalf("Retry-After %q after 10s, want 20", ra)
	}
	e.clock.Advance(20 * time.Second)
	e.want(401, x, "alice", "guess-again")
	if ra := e.want(429, x, "alice", "pw-alice"); ra != "60" {
		t.Fatalf("Retry-After %q after another failure, want 60", ra)
	}
	// Forgotten after the window.
	e.clock.Advance(FailureWindow + time.Second)
	e.want(200, x, "alice", "pw-alice")
}

// TestThrottleParallelBurst: 50 parallel wrong passwords get at most
// PairLimit evaluated; the rest are 429 with Retry-After, never checked.
func TestThrottleParallelBurst(t *testing.T) {
	e := newThrottleEnv(t)
	const z = "10.0.0.9"
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, ra := e.login(z, "carol", "wrong"+strconv.Itoa(i))
			mu.Lock()
			defer mu.Unlock()
			codes[code]++
			if code == 429 && ra == "" {
				t.Error("429 without Retry-After")
			}
		}()
	}
	wg.Wait()
	if codes[401] > PairLimit || codes[401]+codes[429] != 50 {
		t.Fatalf("burst answers %v: want at most %d evaluated (401), the rest 429", codes, PairLimit)
	}
	e.want(429, z, "carol", "pw-carol")
	e.want(200, "10.0.0.10", "carol", "pw-carol")
	e.want(200, z, "bob", "pw-bob")
}

// TestThrottleAccountAndAddress: failures from many addresses lock the
// account for the addresses that failed, not for a clean one; one address
// spraying many accounts is locked for the accounts it failed on, not for
// the others.
func TestThrottleAccountAndAddress(t *testing.T) {
	e := newThrottleEnv(t)
	n := 0
	for a := 1; n < AcctLimit; a++ {
		for i := 0; i < PairLimit-1 && n < AcctLimit; i++ {
			e.want(401, "10.1.0."+strconv.Itoa(a), "bob", "x")
			n++
		}
	}
	e.want(429, "10.1.0.1", "bob", "pw-bob") // an address that failed on bob
	e.want(200, "10.2.0.1", "bob", "pw-bob") // bob himself, elsewhere

	const v = "10.3.0.1"
	users := []string{"alice", "mallory", "carol", "dave", "erin", "frank"}
	for i := 0; i < AddrLimit; i++ {
		e.want(401, v, users[i%len(users)], "x")
	}
	e.want(429, v, "alice", "pw-alice") // failed from v: one attempt per lockout
	e.want(200, v, "bob", "pw-bob")     // never failed from v
	e.want(200, "10.3.0.2", "alice", "pw-alice")
}

// TestThrottleAddressSprayKeepsRealUsersIn: AddrLimit failures with made-up
// names from one address (every client, behind a reverse proxy) do not keep
// out any real user with a correct password, remembered or not, admin
// included; the address's further unknown names are refused without being
// evaluated, and its guesses at real accounts are answered 429 alike and
// limited to one per lockout period per account.
func TestThrottleAddressSprayKeepsRealUsersIn(t *testing.T) {
	e := newThrottleEnv(t)
	const proxy = "10.4.0.1"
	e.want(200, proxy, "bob", "pw-bob") // bob's password is remembered (AuthenticateCached)
	for i := range AddrLimit {
		e.want(401, proxy, "nobody"+strconv.Itoa(i), "bad")
	}
	if ra := e.want(429, proxy, "nobody-else", "bad"); ra != "30" {
		t.Fatalf("an unknown name from the locked address: Retry-After %q, want 30", ra)
	}
	e.want(200, proxy, "alice", "pw-alice") // checked by bcrypt
	e.want(200, proxy, "bob", "pw-bob")     // remembered
	e.want(200, proxy, "alice", "pw-alice")
	// A guess at a real account from the locked address is evaluated once,
	// answered as the refusals are; the account's next attempt waits the
	// lockout, then is evaluated again.
	// (It is the address's 21st failure: its lockout doubles.)
	if ra := e.want(429, proxy, "carol", "guess"); ra != "60" {
		t.Fatalf("a wrong password from the locked address: Retry-After %q, want 60", ra)
	}
	e.want(429, proxy, "carol", "pw-carol")
	e.want(200, "10.4.0.2", "carol", "pw-carol") // carol elsewhere
	e.want(200, proxy, "dave", "pw-dave")
	e.clock.Advance(59 * time.Second)
	e.want(429, proxy, "carol", "pw-carol")
	e.want(429, proxy, "nobody-else", "bad")
	e.clock.Advance(time.Second)
	e.want(200, proxy, "carol", "pw-carol")
	// The address's lockout over, one more made-up name is evaluated, and
	// locks it again: for 60 s, since carol's success took her failure off
	// the address's count.
	e.want(401, proxy, "nobody-else", "bad")
	if ra := e.want(429, proxy, "nobody-more", "bad"); ra != "60" {
		t.Fatalf("after the address's 21st failure: Retry-After %q, want 60", ra)
	}
	e.want(200, proxy, "alice", "pw-alice")
}

// TestThrottleVerifiedParallel: once a password has been verified, parallel
// requests carrying it (a client's 8 connections) are not counted as
// attempts in flight and none is turned away; failures still lock.
func TestThrottleVerifiedParallel(t *testing.T) {
	e := newThrottleEnv(t)
	const x = "10.0.0.20"
	e.want(200, x, "dave", "pw-dave") // verified once (bcrypt), remembered
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _ := e.login(x, "dave", "pw-dave")
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[429] != 0 || codes[401] != 0 {
		t.Fatalf("50 parallel requests with a verified password: %v, want none refused", codes)
	}
	// Failures from x lock the pair even for the remembered password.
	for i := 0; i < PairLimit; i++ {
		e.want(401, x, "dave", "guess"+strconv.Itoa(i))
	}
	e.want(429, x, "dave", "pw-dave")
	e.want(200, "10.0.0.21", "dave", "pw-dave")
}

// TestThrottleFirstParallelLogins: a client's first connections opened at
// once, all with the right password not verified yet, are all let in: the
// attempts beyond the limit of attempts in flight wait for their turn
// instead of being refused (the first verified password lets the rest in).
func TestThrottleFirstParallelLogins(t *testing.T) {
	e := newThrottleEnv(t)
	const x = "10.0.0.30"
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			code, _ := e.login(x, "erin", "pw-erin")
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if codes[401]+codes[429]+codes[403] != 0 {
		t.Fatalf("50 parallel first logins with the right password: %v, want none refused", codes)
	}
}

// TestThrottleQueuedTurn: an attempt held back only by attempts in flight
// gets a turn (closed when one of them ends) and is admitted then; one
// held back by failures gets no turn (refused, 429).
func TestThrottleQueuedTurn(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	th := newThrottle(clock.Now)
	const x = "10.0.0.31"
	for range PairLimit {
		if _, ok, _, _ := th.admitQueued("frank", x, true); !ok {
			t.Fatal("an attempt under the limit was not admitted")
		}
	}
	_, ok, _, turn := th.admitQueued("frank", x, true)
	if ok || turn == nil {
		t.Fatalf("attempt past the attempts in flight: admitted %v, turn %v; want a turn to wait for", ok, turn != nil)
	}
	select {
	case <-turn:
		t.Fatal("turn came before any attempt ended")
	default:
	}
	th.done("frank", x, true, true)
	<-turn
	if _, ok, _, _ := th.admitQueued("frank", x, true); !ok {
		t.Fatal("not admitted after an attempt in flight ended")
	}
	// Failures lock: no turn.
	for range PairLimit {
		th.done("frank", x, true, false)
	}
	if _, ok, _, turn := th.admitQueued("frank", x, true); ok || turn != nil {
		t.Fatalf("locked pair: admitted %v, turn %v; want a refusal", ok, turn != nil)
	}
}
