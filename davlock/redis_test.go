package davlock_test

import (
	"testing"
	"time"

	"netdisk/davlock"
	"netdisk/errs"
	"netdisk/testutil"
)

// Two nodes' tables over one Redis are one table: a lock taken through one
// is seen, conflicts and is removed through the other; it expires on the
// shared clock; a Redis that does not answer makes writes refused, not
// unchecked.
func TestRedisTableSharedAcrossNodes(t *testing.T) {
	r := testutil.StartRedis(t)
	clock := testutil.NewClock(time.Unix(1000, 0))
	a := davlock.NewRedis(r.Client(), "", clock.Now, nil)
	b := davlock.NewRedis(r.Client(), "", clock.Now, nil)
	l, err := a.Create(1, davlock.Lock{Root: "/docs", Infinite: true, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Covering(1, "/docs/a.txt"); len(got) != 1 || got[0].Token != l.Token {
		t.Fatalf("Covering through B = %+v; want A's lock", got)
	}
	if err := davlock.Check(b, 1, nil, davlock.Target{Path: "/docs/a.txt", Deep: true}); !errs.Is(err, errs.Locked) {
		t.Fatalf("write through B without the token: %v; want Locked", err)
	}
	if err := davlock.Check(b, 1, []string{l.Token}, davlock.Target{Path: "/docs/a.txt", Deep: true}); err != nil {
		t.Fatalf("write through B with the token: %v", err)
	}
	if _, err := b.Create(1, davlock.Lock{Root: "/docs/a.txt", Timeout: time.Minute}); !errs.Is(err, errs.Locked) {
		t.Fatalf("conflicting lock through B: %v; want Locked", err)
	}
	if b.Count(2) != 0 || len(b.Covering(2, "/docs")) != 0 {
		t.Fatal("another user sees the lock")
	}
	if err := b.Unlock(1, l.Token, "/docs"); err != nil {
		t.Fatal(err)
	}
	if n := a.Count(1); n != 0 {
		t.Fatalf("A counts %d locks after B unlocked", n)
	}
	l2, err := b.Create(1, davlock.Lock{Root: "/x", Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	if a.Holds(1, l2.Token, "/x") {
		t.Fatal("an expired lock still held")
	}
	r.Kill()
	if err := davlock.Check(a, 1, nil, davlock.Target{Path: "/y"}); !errs.Is(err, errs.Unavailable) {
		t.Fatalf("write with Redis down: %v; want it refused as Unavailable", err)
	}
}
