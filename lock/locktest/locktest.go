// Package locktest is the conformance suite every lock.State passes: the
// branches of seed 003's flowchart, its sequence diagram and scenarios 1–3,
// FIFO order under contention, independence of ops, re-entry, refusal with
// multi-node mode off, leases, bounds and wake-ups across two handles on one
// state (two daemons on one Redis).
package locktest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/lock"
	"netdisk/testutil"
)

// Open returns two handles on one fresh, empty state: for an in-process
// state the same value twice, for a shared store two clients (as two
// daemons would hold).
type Open func(t *testing.T) (a, b lock.State)

const lease = 15 * time.Second

// env is a test's managers over one state and its fake clock.
type env struct {
	t     *testing.T
	clock *testutil.Clock
	m, m2 *lock.Manager
}

func newEnv(t *testing.T, open Open, tune func(*lock.Config)) *env {
	a, b := open(t)
	e := &env{t: t, clock: testutil.NewClock(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))}
	mk := func(st lock.State) *lock.Manager {
		c := lock.Config{State: st, Lease: lease, Now: e.clock.Now}
		if tune != nil {
			tune(&c)
		}
		m, err := lock.NewManager(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(m.Close)
		return m
	}
	e.m, e.m2 = mk(a), mk(b)
	return e
}

var ctx = context.Background()

func node(id string) lock.Node { return lock.Node{User: "1", ID: id} }

func (e *env) try(op string, n lock.Node, want lock.Status, pos int) lock.Result {
	e.t.Helper()
	r, err := e.m.TryLock(ctx, op, "resource123", n)
	if err != nil {
		e.t.Fatalf("TryLock(%s, %s): %v", op, n.ID, err)
	}
	if r.Status != want || r.Position != pos {
		e.t.Fatalf("TryLock(%s, %s) = %s at %d, want %s at %d", op, n.ID, r.Status, r.Position, want, pos)
	}
	return r
}

// queue has holder acquire op on the resource and each waiter queue behind
// it, in order (positions 1, 2, …): where the queue scenarios start.
func (e *env) queue(op string, holder lock.Node, waiters ...lock.Node) {
	e.t.Helper()
	e.try(op, holder, lock.Acquired, 0)
	for i, w := range waiters {
		e.try(op, w, lock.Queued, i+1)
	}
}

func (e *env) standing(m *lock.Manager, op string, n lock.Node, want lock.Status, pos int) {
	e.t.Helper()
	r, err := m.Inspect(ctx, op, "resource123", n)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Status != want || r.Position != pos {
		e.t.Fatalf("Inspect(%s, %s) = %s at %d, want %s at %d", op, n.ID, r.Status, r.Position, want, pos)
	}
}

func (e *env) unlock(op string, n lock.Node, failed bool) {
	e.t.Helper()
	var failure error
	if failed {
		failure = errors.New("失败")
	}
	if err := e.m.Unlock(ctx, op, "resource123", n, failure); err != nil {
		e.t.Fatalf("Unlock(%s, %s): %v", op, n.ID, err)
	}
}

// next waits for the subscription's next event (wake-ups of a shared store
// arrive asynchronously; the bound is generous, not a timing assumption).
func (e *env) next(s *lock.Subscription) lock.Event {
	e.t.Helper()
	select {
	case ev, ok := <-s.C:
		if !ok {
			e.t.Fatal("subscription closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		e.t.Fatal("no event within 10s")
	}
	return lock.Event{}
}

func (e *env) expect(s *lock.Subscription, typ lock.EventType, key string) {
	e.t.Helper()
	ev := e.next(s)
	if ev.Type != typ || ev.Key != key {
		e.t.Fatalf("event %s %s, want %s %s", ev.Type, ev.Key, typ, key)
	}
}

// barrier proves that no event reached s before now: it makes n hold and
// lose a private key, and the first event s sees must be that loss.
func (e *env) barrier(s *lock.Subscription, n lock.Node) {
	e.t.Helper()
	if _, err := e.m.TryLock(ctx, "barrier", n.ID, n); err != nil {
		e.t.Fatal(err)
	}
	e.clock.Advance(lease)
	if _, err := e.m.Inspect(ctx, "barrier", n.ID, n); err != nil {
		e.t.Fatal(err)
	}
	e.expect(s, lock.EventLost, "barrier:"+n.ID)
}

// Run runs the suite.
func Run(t *testing.T, open Open) {
	A, B, C, D := node("A"), node("B"), node("C"), node("D")
	const pull = "pull:resource123"

	t.Run("KeyIsOpColonResource", func(t *testing.T) {
		if k := lock.Key("pull", "resource123"); k != pull {
			t.Fatalf("Key = %q", k)
		}
		if op, res := lock.SplitKey("update:content:ab"); op != "update" || res != "content:ab" {
			t.Fatalf("SplitKey = %q %q", op, res)
		}
	})

	// Flowchart: free → acquired; same node → acquired again (re-entry);
	// other node → queued; one Unlock releases a re-entered lock.
	t.Run("FreeAcquiresSameNodeReenters", func(t *testing.T) {
		e := newEnv(t, open, nil)
		if r := e.try("pull", A, lock.Acquired, 0); r.Reentered || !r.Deadline.Equal(e.clock.Now().Add(lease)) {
			t.Fatalf("first acquire %+v", r)
		}
		e.clock.Advance(time.Second)
		if r := e.try("pull", A, lock.Acquired, 0); !r.Reentered || !r.Deadline.Equal(e.clock.Now().Add(lease)) {
			t.Fatalf("re-entry %+v: want Reentered and a renewed lease", r)
		}
		e.unlock("pull", A, false)
		e.standing(e.m, "pull", A, lock.None, 0)
		e.try("pull", B, lock.Acquired, 0)
	})

	// Seed scenario 1: several nodes wait in one op's queue; each failure
	// passes the lock to the next in FIFO order.
	t.Run("Scenario1FailuresPassInFIFOOrder", func(t *testing.T) {
		e := newEnv(t, open, nil)
		sb, sc := e.m.Subscribe(B), e.m.Subscribe(C)
		e.queue("pull", A, B, C)
		e.unlock("pull", A, true)
		e.expect(sb, lock.EventGranted, pull)
		e.standing(e.m, "pull", B, lock.Granted, 0)
		e.standing(e.m, "pull", C, lock.Queued, 1)
		e.standing(e.m, "pull", A, lock.None, 0)
		e.try("pull", B, lock.Acquired, 0) // claims the grant
		e.unlock("pull", B, true)
		e.expect(sc, lock.EventGranted, pull)
		e.try("pull", C, lock.Acquired, 0)
		e.unlock("pull", C, true) // empty queue: the lock is deleted
		e.standing(e.m, "pull", C, lock.None, 0)
		e.try("pull", D, lock.Acquired, 0)
	})

	// Seed's sequence diagram and scenario 2: pull, update and delete of one
	// resource run at once; a pull failure moves only the pull queue.
	t.Run("Scenario2OpsAreIndependent", func(t *testing.T) {
		e := newEnv(t, open, nil)
		sd := e.m.Subscribe(D)
		e.try("pull", A, lock.Acquired, 0)
		e.try("update", B, lock.Acquired, 0)
		e.try("delete", C, lock.Acquired, 0)
		e.try("pull", D, lock.Queued, 1)
		e.unlock("pull", A, true)
		e.expect(sd, lock.EventGranted, pull)
		e.try("pull", D, lock.Acquired, 0)
		e.standing(e.m, "update", B, lock.Acquired, 0)
		e.standing(e.m, "delete", C, lock.Acquired, 0)
		// A failed update wakes nobody in the pull queue.
		e.try("update", A, lock.Queued, 1)
		e.unlock("update", B, true)
		e.standing(e.m, "update", A, lock.Granted, 0)
		e.standing(e.m, "pull", D, lock.Acquired, 0)
	})

	// Seed scenario 3: success deletes the lock and does not process the
	// queue; every waiter is woken to re-check the resource.
	t.Run("Scenario3SuccessWakesEveryWaiter", func(t *testing.T) {
		e := newEnv(t, open, nil)
		sb, sc := e.m.Subscribe(B), e.m.Subscribe(C)
		e.queue("pull", A, B, C)
		e.unlock("pull", A, false)
		e.expect(sb, lock.EventReleased, pull)
		e.expect(sc, lock.EventReleased, pull)
		e.standing(e.m, "pull", B, lock.None, 0) // nobody inherited it
		e.standing(e.m, "pull", C, lock.None, 0)
		e.standing(e.m, "pull", A, lock.None, 0)
		// Were the resource still missing, the first to ask again gets it.
		e.try("pull", C, lock.Acquired, 0)
	})

	// Multi-node mode off: a busy key is refused and nothing is queued, so
	// nobody is woken later.
	t.Run("SingleNodeRefusesWithoutQueueing", func(t *testing.T) {
		e := newEnv(t, open, func(c *lock.Config) { c.SingleNode = true })
		sb := e.m.Subscribe(B)
		e.try("pull", A, lock.Acquired, 0)
		e.try("pull", B, lock.Refused, 0)
		e.standing(e.m, "pull", B, lock.None, 0)
		e.try("pull", A, lock.Acquired, 0) // re-entry still works
		e.try("update", B, lock.Acquired, 0)
		e.unlock("pull", A, true)
		e.standing(e.m, "pull", B, lock.None, 0)
		e.barrier(sb, B) // no grant reached B
	})

	t.Run("QueuedNodeAskingAgainKeepsItsPlace", func(t *testing.T) {
		e := newEnv(t, open, nil)
		e.queue("pull", A, B, C)
		e.try("pull", B, lock.Queued, 1)
		e.try("pull", C, lock.Queued, 2)
		e.try("pull", D, lock.Queued, 3)
	})

	t.Run("WaiterUnlockingLeavesTheQueue", func(t *testing.T) {
		e := newEnv(t, open, nil)
		e.queue("pull", A, B, C)
		e.unlock("pull", B, false)
		e.standing(e.m, "pull", B, lock.None, 0)
		e.standing(e.m, "pull", C, lock.Queued, 1)
		e.unlock("pull", A, true)
		e.standing(e.m, "pull", C, lock.Granted, 0)
		if err := e.m.Unlock(ctx, "pull", "resource123", D, nil); !errs.Is(err, errs.Conflict) {
			t.Fatalf("Unlock by a stranger: %v, want Conflict", err)
		}
	})

	t.Run("DifferentUsersSameNodeIDAreDifferentNodes", func(t *testing.T) {
		e := newEnv(t, open, nil)
		e.try("pull", lock.Node{User: "1", ID: "n"}, lock.Acquired, 0)
		e.try("pull", lock.Node{User: "2", ID: "n"}, lock.Queued, 1)
	})

	// A killed holder stops heart-beating: after its lease the lock passes
	// to the queue head, by the sweep or by the next call on the key, and
	// the old holder can neither renew nor release the new holder's lock.
	t.Run("LeaseExpiryOfAKilledHolder", func(t *testing.T) {
		e := newEnv(t, open, nil)
		sa, sb := e.m.Subscribe(A), e.m.Subscribe(B)
		e.queue("pull", A, B)
		e.clock.Advance(lease - time.Millisecond)
		if err := e.m.Expire(ctx); err != nil {
			t.Fatal(err)
		}
		e.standing(e.m, "pull", A, lock.Acquired, 0)
		e.clock.Advance(time.Millisecond)
		if err := e.m.Expire(ctx); err != nil {
			t.Fatal(err)
		}
		e.expect(sa, lock.EventLost, pull)
		e.expect(sb, lock.EventGranted, pull)
		if _, err := e.m.Heartbeat(ctx, "pull", "resource123", A); !errs.Is(err, errs.Conflict) {
			t.Fatalf("Heartbeat of the lost holder: %v, want Conflict", err)
		}
		if err := e.m.Unlock(ctx, "pull", "resource123", A, nil); !errs.Is(err, errs.Conflict) {
			t.Fatalf("Unlock of the lost holder: %v, want Conflict", err)
		}
		e.try("pull", B, lock.Acquired, 0)
	})

	t.Run("ExpiryWithoutASweepOnTheNextCall", func(t *testing.T) {
		e := newEnv(t, open, nil)
		e.try("pull", A, lock.Acquired, 0)
		e.clock.Advance(lease)
		e.try("pull", B, lock.Acquired, 0)
	})

	t.Run("HeartbeatsKeepTheLease", func(t *testing.T) {
		e := newEnv(t, open, nil)
		e.queue("pull", A, B)
		for range 5 {
			e.clock.Advance(lease * 9 / 10)
			r, err := e.m.Heartbeat(ctx, "pull", "resource123", A)
			if err != nil || r.Status != lock.Acquired || !r.Deadline.Equal(e.clock.Now().Add(lease)) {
				t.Fatalf("Heartbeat = %+v, %v", r, err)
			}
			if err := e.m.Expire(ctx); err != nil {
				t.Fatal(err)
			}
		}
		e.standing(e.m, "pull", A, lock.Acquired, 0)
		e.standing(e.m, "pull", B, lock.Queued, 1)
	})

	// A queue head granted the lock that never claims it is skipped.
	t.Run("UnclaimedGrantIsSkipped", func(t *testing.T) {
		e := newEnv(t, open, nil)
		sc := e.m.Subscribe(C)
		e.queue("pull", A, B, C)
		e.unlock("pull", A, true)
		e.standing(e.m, "pull", B, lock.Granted, 0)
		e.clock.Advance(lease)
		if err := e.m.Expire(ctx); err != nil {
			t.Fatal(err)
		}
		e.expect(sc, lock.EventGranted, pull)
		e.standing(e.m, "pull", B, lock.None, 0)
		e.try("pull", C, lock.Acquired, 0)
	})

	t.Run("QueueBoundPerKey", func(t *testing.T) {
		e := newEnv(t, open, func(c *lock.Config) { c.MaxQueue = 2 })
		e.queue("pull", A, B, C)
		if _, err := e.m.TryLock(ctx, "pull", "resource123", D); !errs.Is(err, errs.TooMany) {
			t.Fatalf("third waiter: %v, want TooMany", err)
		}
		e.standing(e.m, "pull", D, lock.None, 0)
		e.try("update", D, lock.Acquired, 0) // another key, another queue
	})

	t.Run("QueueBoundPerUser", func(t *testing.T) {
		e := newEnv(t, open, func(c *lock.Config) { c.MaxUserWait = 2 })
		other := lock.Node{User: "2", ID: "x"}
		for _, op := range []string{"pull", "update", "delete"} {
			e.try(op, other, lock.Acquired, 0)
		}
		e.try("pull", A, lock.Queued, 1)
		e.try("update", B, lock.Queued, 1)
		if _, err := e.m.TryLock(ctx, "delete", "resource123", C); !errs.Is(err, errs.TooMany) {
			t.Fatalf("user's third wait: %v, want TooMany", err)
		}
		e.try("delete", lock.Node{User: "3", ID: "y"}, lock.Queued, 1) // other users unaffected
		// Slots come back when waits end: by a grant, a release, leaving.
		e.unlock("pull", A, false) // A leaves the pull queue
		e.try("delete", C, lock.Queued, 2)
		if _, err := e.m.TryLock(ctx, "pull", "resource123", D); !errs.Is(err, errs.TooMany) {
			t.Fatalf("after one slot came back and was taken: %v, want TooMany", err)
		}
		if err := e.m.Unlock(ctx, "update", "resource123", other, errors.New("x")); err != nil {
			t.Fatal(err)
		} // B granted: a slot back
		if err := e.m.Unlock(ctx, "delete", "resource123", other, nil); err != nil {
			t.Fatal(err)
		} // delete waiters released: two slots of user 1 back
		e.try("pull", A, lock.Queued, 1)
		e.try("pull", D, lock.Queued, 2)
	})

	// Many nodes racing for one held key each get a distinct place, and
	// failures hand the lock over exactly in that order.
	t.Run("FIFOUnderContention", func(t *testing.T) {
		e := newEnv(t, open, nil)
		e.try("pull", A, lock.Acquired, 0)
		const n = 40
		pos := make([]int, n)
		var wg sync.WaitGroup
		var firstErr error
		var mu sync.Mutex
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := e.m
				if i%2 == 1 {
					m = e.m2
				}
				r, err := m.TryLock(ctx, "pull", "resource123", node(fmt.Sprint("w", i)))
				mu.Lock()
				defer mu.Unlock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				pos[i] = r.Position
			}()
		}
		wg.Wait()
		if firstErr != nil {
			t.Fatal(firstErr)
		}
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(a, b int) bool { return pos[order[a]] < pos[order[b]] })
		for k, i := range order {
			if pos[i] != k+1 {
				t.Fatalf("positions are not 1..%d: %v", n, pos)
			}
		}
		holder := A
		for _, i := range order {
			e.unlock("pull", holder, true)
			holder = node(fmt.Sprint("w", i))
			e.standing(e.m2, "pull", holder, lock.Granted, 0)
			e.try("pull", holder, lock.Acquired, 0)
		}
		e.unlock("pull", holder, true)
		e.standing(e.m, "pull", holder, lock.None, 0)
	})

	// Two handles on one state (two daemons on one Redis): one queue, and
	// wake-ups reach a node subscribed on the other.
	t.Run("TwoHandlesShareQueuesAndWakeUps", func(t *testing.T) {
		e := newEnv(t, open, nil)
		sb, sc := e.m2.Subscribe(B), e.m2.Subscribe(C)
		e.try("pull", A, lock.Acquired, 0)
		if r, err := e.m2.TryLock(ctx, "pull", "resource123", B); err != nil || r.Status != lock.Queued || r.Position != 1 {
			t.Fatalf("B on the second handle: %+v %v", r, err)
		}
		e.try("pull", C, lock.Queued, 2)
		e.unlock("pull", A, true)
		e.expect(sb, lock.EventGranted, pull)
		if r, err := e.m2.TryLock(ctx, "pull", "resource123", B); err != nil || r.Status != lock.Acquired {
			t.Fatalf("B claims on the second handle: %+v %v", r, err)
		}
		if err := e.m2.Unlock(ctx, "pull", "resource123", B, nil); err != nil {
			t.Fatal(err)
		}
		e.expect(sc, lock.EventReleased, pull)
	})

	t.Run("SubscriptionsEnd", func(t *testing.T) {
		e := newEnv(t, open, nil)
		s := e.m.Subscribe(A)
		s.Close()
		if _, ok := <-s.C; ok {
			t.Fatal("closed subscription delivered")
		}
		s2 := e.m.Subscribe(A)
		e.m.Close()
		if _, ok := <-s2.C; ok {
			t.Fatal("subscription outlived its manager")
		}
	})
}
