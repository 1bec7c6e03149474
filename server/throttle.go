package server

import (
	"strings"
	"sync"
	"time"
)

// Login throttling. Failures are counted per (account, address) pair, and
// summed per address and per account; a key that reaches its limit is locked
// out for a while, and while locked a request for it is answered 429 with
// Retry-After before its password is even looked at.
//
//   - pair (account, address): PairLimit failures lock that account for that
//     address. A success clears this pair only: an attacker who owns an
//     account cannot reset the counter of the account they are guessing.
//   - address: AddrLimit failures over all accounts lock the address (one
//     address spraying many accounts) for the names that do not exist and
//     the accounts that have failed from it, never for the others. Behind
//     a reverse proxy every client is one address: a spray of made-up names
//     must not keep real users out. So while the address is locked, an
//     unknown name is refused, an account that has failed from the address
//     gets one attempt per lockout period (counted from its own last
//     failure), and an account that has not failed from it is evaluated as
//     usual (one attempt at a time), its correct password admitted. A wrong
//     password evaluated then is answered 429 like the refusals, so the
//     locked address cannot tell known names from unknown ones by status.
//   - account: AcctLimit failures from all addresses lock the account, but
//     only for the addresses that have failed on it. The real user at
//     another address, who has not failed, still gets in: an attacker cannot
//     lock a user out from elsewhere; a distributed attacker gets one or a few
//     guesses per address, not unlimited.
//
// Attempts being evaluated count against the limits too (inflight), so a
// burst of parallel requests gets at most the limit evaluated, not one per
// connection. An attempt held back only by attempts in flight waits for one
// of them to end and is decided then (admitQueued), rather than refused: a
// client opening several connections at once with a right password (rclone
// --transfers 8, a file manager) is let in once the first is verified, and
// a burst of guesses still gets at most the limit evaluated before the
// lockout refuses the rest. Once locked, the lockout doubles with each further failure
// (LockBase to LockMax); failures are forgotten FailureWindow after the last
// (the address and account sums after their own last failure).
const (
	PairLimit     = 5
	AddrLimit     = 20
	AcctLimit     = 10
	LockBase      = 30 * time.Second
	LockMax       = 15 * time.Minute
	FailureWindow = 15 * time.Minute
	maxTracked    = 10000 // pairs remembered before stale ones are swept
)

type counter struct {
	n        int       // failures in the window
	last     time.Time // time of the last failure
	inflight int       // attempts admitted and being evaluated
}

// lockedFor says how long c blocks a new attempt (0: it does not); busy
// says it blocks only because of attempts still being evaluated: those are
// waited for rather than more evaluated in parallel.
func (c *counter) lockedFor(limit int, now time.Time) (wait time.Duration, busy bool) {
	if c == nil || c.n+c.inflight < limit {
		return 0, false
	}
	if c.n < limit {
		return time.Second, true
	}
	if d := waitFrom(c.last, lockout(c.n, limit), now); d > 0 {
		return d, false
	}
	if c.inflight > 0 {
		return time.Second, true
	}
	return 0, false
}

// lockout is how long n failures lock a key whose limit is limit (n ≥
// limit): LockBase, doubled by each failure beyond the limit, at most LockMax.
func lockout(n, limit int) time.Duration {
	lock := LockBase << min(n-limit, 10)
	if lock > LockMax || lock <= 0 {
		lock = LockMax
	}
	return lock
}

// waitFrom is what remains at now of a lock of d from last (0: none).
func waitFrom(last time.Time, d time.Duration, now time.Time) time.Duration {
	if until := last.Add(d); now.Before(until) {
		return until.Sub(now)
	}
	return 0
}

type pairKey struct{ account, addr string }

// throttle holds the counters; now is the injected clock.
type throttle struct {
	now   func() time.Time
	mu    sync.Mutex
	pairs map[pairKey]*counter
	addrs map[string]*counter
	accts map[string]*counter
	swept time.Time // last sweep: at most one a minute, however many are tracked
	// shared, when set, holds the failure counts every node sees
	// (throttle_redis.go).
	shared *sharedFailures
	// turn is closed (and replaced) when an attempt in flight ends: the
	// attempts waiting for one (admitQueued) are decided again.
	turn chan struct{}
}

func newThrottle(now func() time.Time) *throttle {
	return &throttle{now: now, pairs: map[pairKey]*counter{}, addrs: map[string]*counter{}, accts: map[string]*counter{}}
}

// accountKey folds case: user names are unique without regard to case, so
// ALICE and alice are one account to throttle too.
func accountKey(name string) string { return strings.ToLower(name) }

// live returns m[k], dropping it first when its failures are out of the window.
func live[K comparable](m map[K]*counter, k K, now time.Time) *counter {
	c := m[k]
	if c != nil && c.inflight == 0 && now.Sub(c.last) > FailureWindow {
		delete(m, k)
		return nil
	}
	return c
}

func ensure[K comparable](m map[K]*counter, k K) *counter {
	c := m[k]
	if c == nil {
		c = &counter{}
		m[k] = c
	}
	return c
}

// admit decides whether an attempt for account from addr may be evaluated;
// known says whether the account exists. If not, it returns how long to
// wait. If so, the caller must call done with the outcome; addrLocked then
// says the address was locked (a failure is answered 429, as a refusal).
func (t *throttle) admit(account, addr string, known bool) (retry time.Duration, ok, addrLocked bool) {
	retry, ok, addrLocked, _ = t.admitQueued(account, addr, known)
	return retry, ok, addrLocked
}

// admitQueued is admit for an attempt that can wait its turn: when only
// attempts in flight hold it back, turn is a channel closed as soon as one
// of them ends; the caller waits for it (or gives up) and asks again. A
// refusal by failures has no turn (nil): it is answered 429.
func (t *throttle) admitQueued(account, addr string, known bool) (retry time.Duration, ok, addrLocked bool, turn <-chan struct{}) {
	pk := pairKey{accountKey(account), addr}
	sc := t.loadShared(pk)
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	t.adopt(pk, sc)
	if wait, busy := t.lockWait(pk, now, asIs, known); wait > 0 {
		if busy {
			if t.turn == nil {
				t.turn = make(chan struct{})
			}
			turn = t.turn
		}
		return wait, false, true, turn
	}
	wait, _ := live(t.addrs, pk.addr, now).lockedFor(AddrLimit, now)
	addrLocked = wait > 0
	for _, c := range t.counters(pk) {
		c.inflight++
	}
	return 0, true, addrLocked, nil
}

// retryAfter is how long an attempt for account from addr would now wait
// (the Retry-After of a failure evaluated while the address was locked).
func (t *throttle) retryAfter(account, addr string, known bool) time.Duration {
	pk := pairKey{accountKey(account), addr}
	t.mu.Lock()
	defer t.mu.Unlock()
	wait, _ := t.lockWait(pk, t.now(), asIs, known)
	return wait
}

func asIs(c *counter) *counter { return c }

// sharedCounts are the failure counts all nodes see for an attempt's pair,
// address and account (ok false: no shared counts), loaded before t.mu is
// taken.
type sharedCounts struct {
	n    [3]int
	last [3]int64 // Unix ns
	ok   bool
}

func (t *throttle) loadShared(pk pairKey) (sc sharedCounts) {
	if t.shared != nil {
		sc.n, sc.last, sc.ok = t.shared.load(pk.account, pk.addr)
	}
	return sc
}

// counters returns the pair's, the address's and the account's counters,
// created when missing (t.mu held).
func (t *throttle) counters(pk pairKey) [3]*counter {
	return [3]*counter{ensure(t.pairs, pk), ensure(t.addrs, pk.addr), ensure(t.accts, pk.account)}
}

// adopt sets this node's failure counts to the shared ones (t.mu held): the
// shared counts are the truth; this node's counters keep only their
// attempts in flight.
func (t *throttle) adopt(pk pairKey, sc sharedCounts) {
	if !sc.ok {
		return
	}
	for i, c := range t.counters(pk) {
		c.n, c.last = sc.n[i], time.Unix(0, sc.last[i])
	}
}

// lockWait says how long the counters of pk block a new attempt, each
// counter as view shows it (t.mu held); known says the account exists. The
// account's count locks out only a pair that has failed itself, so a spray
// at one account does not lock its owner out from elsewhere; the address's
// count refuses only unknown names and accounts that failed from it (the
// package comment's rules). busy says only attempts in flight block it.
func (t *throttle) lockWait(pk pairKey, now time.Time, view func(*counter) *counter, known bool) (wait time.Duration, busy bool) {
	var locked, inFlight time.Duration // by failures; by attempts being evaluated
	add := func(d time.Duration, busy bool) {
		if busy {
			inFlight = max(inFlight, d)
		} else {
			locked = max(locked, d)
		}
	}
	pair := view(live(t.pairs, pk, now))
	failing := pair != nil && pair.n > 0
	add(pair.lockedFor(PairLimit, now))
	if failing {
		add(view(live(t.accts, pk.account, now)).lockedFor(AcctLimit, now))
	}
	a := view(live(t.addrs, pk.addr, now))
	addrWait, addrBusy := a.lockedFor(AddrLimit, now)
	switch {
	case addrWait == 0:
	case !known:
		add(addrWait, addrBusy)
	case failing && a.n >= AddrLimit:
		// One attempt per lockout of the address, from the account's own
		// last failure: a real user who mistyped waits, a guesser gets a
		// guess per period.
		add(waitFrom(pair.last, lockout(a.n, AddrLimit), now), false)
	case failing || pair != nil && pair.inflight > 0:
		// The address is at its limit counting attempts in flight, or this
		// account already has one being evaluated: one at a time.
		add(time.Second, true)
	}
	if locked > 0 {
		return locked, false
	}
	return inFlight, inFlight > 0
}

// clearPair takes a success: the pair's failures are cleared and taken off
// the address's and the account's sums (t.mu held).
func (t *throttle) clearPair(pk pairKey) {
	c := t.counters(pk)
	pair, a, acct := c[0], c[1], c[2]
	a.n = max(a.n-pair.n, 0)
	acct.n = max(acct.n-pair.n, 0)
	pair.n = 0
}

// dropIdle forgets pk's counters that hold nothing (t.mu held).
func (t *throttle) dropIdle(pk pairKey) {
	dropIdle(t.pairs, pk)
	dropIdle(t.addrs, pk.addr)
	dropIdle(t.accts, pk.account)
}

// admitVerified is admit for a password the drive has verified before and
// vouches for without evaluating it again (drive.AuthenticateCached): it is
// refused only by a lockout from failures, not by attempts in flight, since
// it cannot be a guess; parallel connections of a logged-in client (rclone
// --transfers 8) are not turned away. When admitted it counts as a success
// (the pair's failures are cleared, as done does).
func (t *throttle) admitVerified(account, addr string) bool {
	pk := pairKey{accountKey(account), addr}
	// Nodes sharing the users lock a pair out together: the failures
	// another node saw refuse a remembered password here too.
	sc := t.loadShared(pk)
	ok, cleared := t.admitVerifiedLocal(pk, sc)
	if ok && cleared && t.shared != nil {
		t.shared.record(pk.account, pk.addr, true, t.now())
	}
	return ok
}

// admitVerifiedLocal is admitVerified on this node's counters (loaded with
// the shared counts sc); cleared reports that the pair had failures that
// the success cleared.
func (t *throttle) admitVerifiedLocal(pk pairKey, sc sharedCounts) (ok, cleared bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if sc.ok {
		t.adopt(pk, sc)
		defer t.dropIdle(pk)
	}
	settled := func(c *counter) *counter { // the failures only
		if c == nil {
			return nil
		}
		return &counter{n: c.n, last: c.last}
	}
	// known: the password was verified, so the account exists.
	if wait, _ := t.lockWait(pk, now, settled, true); wait > 0 {
		return false, false
	}
	if pair := live(t.pairs, pk, now); pair != nil && pair.n > 0 {
		t.clearPair(pk)
		t.dropIdle(pk)
		return true, true
	}
	return true, false
}

// done records the outcome of an admitted attempt: a failure counts on the
// pair, the address and the account; a success clears the pair's failures
// (and takes them off the address's and account's sums) and nothing else.
// evaluated false (the check could not be made) records nothing.
func (t *throttle) done(account, addr string, evaluated, success bool) {
	pk := pairKey{accountKey(account), addr}
	if t.shared != nil && evaluated {
		t.shared.record(pk.account, pk.addr, success, t.now())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	for _, c := range t.counters(pk) {
		c.inflight--
	}
	if t.turn != nil {
		close(t.turn)
		t.turn = nil
	}
	switch {
	case evaluated && success:
		t.clearPair(pk)
	case evaluated:
		for _, c := range t.counters(pk) {
			c.n++
			c.last = now
		}
	}
	t.dropIdle(pk)
	if len(t.pairs) > maxTracked && now.Sub(t.swept) > time.Minute { // bound memory under a spray of addresses
		t.swept = now
		t.sweep(now)
	}
}

func dropIdle[K comparable](m map[K]*counter, k K) {
	if c := m[k]; c != nil && c.n == 0 && c.inflight == 0 {
		delete(m, k)
	}
}

func (t *throttle) sweep(now time.Time) {
	sweep(t.pairs, now)
	sweep(t.addrs, now)
	sweep(t.accts, now)
}

// sweep drops m's counters whose failures are out of the window.
func sweep[K comparable](m map[K]*counter, now time.Time) {
	for k := range m {
		live(m, k, now)
	}
}
