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
//     address spraying many accounts).
//   - account: AcctLimit failures from all addresses lock the account, but
//     only for the addresses that have failed on it. The real user at
//     another address, who has not failed, still gets in: an attacker cannot
//     lock a user out from elsewhere; a distributed attacker gets one or a few
//     guesses per address, not unlimited.
//
// Attempts being evaluated count against the limits too (inflight), so a
// burst of parallel requests gets at most the limit evaluated, not one per
// connection. Once locked, the lockout doubles with each further failure
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

// lockedFor says how long c blocks a new attempt (0: it does not).
func (c *counter) lockedFor(limit int, now time.Time) time.Duration {
	if c == nil || c.n+c.inflight < limit {
		return 0
	}
	if c.n < limit || c.inflight > 0 {
		// The limit is reached only counting attempts still being evaluated:
		// wait for them rather than evaluating more in parallel.
		return time.Second
	}
	lock := LockBase << min(c.n-limit, 10)
	if lock > LockMax || lock <= 0 {
		lock = LockMax
	}
	if until := c.last.Add(lock); now.Before(until) {
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

// admit decides whether an attempt for account from addr may be evaluated.
// If not, it returns how long to wait. If so, the caller must call done with
// the outcome.
func (t *throttle) admit(account, addr string) (retry time.Duration, ok bool) {
	account = accountKey(account)
	var sn [3]int
	var slast [3]int64
	shared := false
	if t.shared != nil {
		sn, slast, shared = t.shared.load(account, addr)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	pk := pairKey{account, addr}
	if shared {
		// The shared counts are the truth; this node's counters keep only
		// their attempts in flight.
		for i, c := range []*counter{ensure(t.pairs, pk), ensure(t.addrs, addr), ensure(t.accts, account)} {
			c.n, c.last = sn[i], time.Unix(0, slast[i])
		}
	}
	pair := live(t.pairs, pk, now)
	wait := max(pair.lockedFor(PairLimit, now), live(t.addrs, addr, now).lockedFor(AddrLimit, now))
	if pair != nil && pair.n > 0 {
		wait = max(wait, live(t.accts, account, now).lockedFor(AcctLimit, now))
	}
	if wait > 0 {
		return wait, false
	}
	ensure(t.pairs, pk).inflight++
	ensure(t.addrs, addr).inflight++
	ensure(t.accts, account).inflight++
	return 0, true
}

// admitVerified is admit for a password the drive has verified before and
// vouches for without evaluating it again (drive.AuthenticateCached): it is
// refused only by a lockout from failures, not by attempts in flight, since
// it cannot be a guess; parallel connections of a logged-in client (rclone
// --transfers 8) are not turned away. When admitted it counts as a success
// (the pair's failures are cleared, as done does).
func (t *throttle) admitVerified(account, addr string) bool {
	account = accountKey(account)
	var sn [3]int
	var slast [3]int64
	shared := false
	if t.shared != nil {
		// Nodes sharing the users lock a pair out together: the failures
		// another node saw refuse a remembered password here too.
		sn, slast, shared = t.shared.load(account, addr)
	}
	ok, cleared := t.admitVerifiedLocal(account, addr, shared, sn, slast)
	if ok && cleared && t.shared != nil {
		t.shared.record(account, addr, true, t.now())
	}
	return ok
}

// admitVerifiedLocal is admitVerified on this node's counters (loaded with
// the shared counts when shared); cleared reports that the pair had failures
// that the success cleared.
func (t *throttle) admitVerifiedLocal(account, addr string, shared bool, sn [3]int, slast [3]int64) (ok, cleared bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	pk := pairKey{account, addr}
	if shared {
		for i, c := range []*counter{ensure(t.pairs, pk), ensure(t.addrs, addr), ensure(t.accts, account)} {
			c.n, c.last = sn[i], time.Unix(0, slast[i])
		}
		defer func() {
			dropIdle(t.pairs, pk)
			dropIdle(t.addrs, addr)
			dropIdle(t.accts, account)
		}()
	}
	settled := func(c *counter) *counter { // the failures only
		if c == nil {
			return nil
		}
		return &counter{n: c.n, last: c.last}
	}
	pair := live(t.pairs, pk, now)
	wait := max(settled(pair).lockedFor(PairLimit, now), settled(live(t.addrs, addr, now)).lockedFor(AddrLimit, now))
	if pair != nil && pair.n > 0 {
		wait = max(wait, settled(live(t.accts, account, now)).lockedFor(AcctLimit, now))
	}
	if wait > 0 {
		return false, false
	}
	if pair != nil && pair.n > 0 {
		a, acct := ensure(t.addrs, addr), ensure(t.accts, account)
		a.n = max(a.n-pair.n, 0)
		acct.n = max(acct.n-pair.n, 0)
		pair.n = 0
		dropIdle(t.pairs, pk)
		dropIdle(t.addrs, addr)
		dropIdle(t.accts, account)
		return true, true
	}
	return true, false
}

// done records the outcome of an admitted attempt: a failure counts on the
// pair, the address and the account; a success clears the pair's failures
// (and takes them off the address's and account's sums) and nothing else.
// evaluated false (the check could not be made) records nothing.
func (t *throttle) done(account, addr string, evaluated, success bool) {
	account = accountKey(account)
	if t.shared != nil && evaluated {
		t.shared.record(account, addr, success, t.now())
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	pk := pairKey{account, addr}
	pair, a, acct := ensure(t.pairs, pk), ensure(t.addrs, addr), ensure(t.accts, account)
	pair.inflight--
	a.inflight--
	acct.inflight--
	switch {
	case evaluated && success:
		a.n = max(a.n-pair.n, 0)
		acct.n = max(acct.n-pair.n, 0)
		pair.n = 0
	case evaluated:
		for _, c := range []*counter{pair, a, acct} {
			c.n++
			c.last = now
		}
	}
	dropIdle(t.pairs, pk)
	dropIdle(t.addrs, addr)
	dropIdle(t.accts, account)
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
	for k, c := range t.pairs {
		if c.inflight == 0 && now.Sub(c.last) > FailureWindow {
			delete(t.pairs, k)
		}
	}
	for k, c := range t.addrs {
		if c.inflight == 0 && now.Sub(c.last) > FailureWindow {
			delete(t.addrs, k)
		}
	}
	for k, c := range t.accts {
		if c.inflight == 0 && now.Sub(c.last) > FailureWindow {
			delete(t.accts, k)
		}
	}
}
