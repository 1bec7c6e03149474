package lock

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"netdisk/apitype"
	"netdisk/errs"
	"netdisk/internal/tick"
)

// PullOp is the op of pull locks: a fetch of content that several nodes want.
const PullOp = apitype.LockOpPull

// Pull does a piece of one-time work (fetch a chunk into a cache several
// processes share) once among the nodes asking for it at the same time, by
// the seed's rules: the node that acquires op:resource runs work, the others
// wait in FIFO order; the holder's success wakes them (EventReleased) to
// re-check with have and return, its failure passes the lock to the queue
// head, which runs work in turn.
//
// have reports whether the work's result is already there; it is asked
// before every try, and again once the lock is acquired (the previous holder
// may have finished between a waiter's wake-up and its try). The one try it
// is not asked before is a granted waiter's claim: the lock is that node's
// until it claims and unlocks, so a granted node that found the result and
// returned would stall the queue behind it for a lease. It claims, finds the
// result, and unlocks with success, which wakes every waiter at once. work
// runs with the lease heart-beaten; its error unlocks with failure and is
// returned.
//
// The wait is bounded by ctx (the caller leaves the queue when it ends). Pull
// never fails because of the lock service: when it cannot coordinate
// (unreachable, a queue bound reached, single-node mode refusing the key),
// work runs here uncoordinated — one fetch too many is cheaper than a read
// that fails — and the manager logs the outage once, and its end.
//
// One node must not pull one key from two goroutines at once (the second
// would re-enter the lock the first holds): callers collapse their own
// concurrent calls first (dedup.Cache does, with a singleflight).
func (m *Manager) Pull(ctx context.Context, op, resource string, n Node, have func() bool, work func(context.Context) error) error {
	key := Key(op, resource)
	granted := false
	for {
		// A granted node claims before anything else: returning without
		// claiming would leave the queue behind it stalled for a lease.
		if !granted && have() {
			return nil
		}
		// Subscribe before asking: a wake-up between the two is then not
		// missed.
		sub := m.Subscribe(n)
		r, err := m.TryLock(ctx, op, resource, n)
		if err != nil {
			sub.Close()
			if ctx.Err() != nil {
				return ctx.Err()
			}
			m.uncoordinated(key, err)
			return work(ctx)
		}
		m.coordinated()
		switch r.Status {
		case Acquired:
			sub.Close()
			return m.holdPull(ctx, op, resource, n, have, work)
		case Refused:
			sub.Close()
			return work(ctx) // single-node mode: by configuration, not an outage
		}
		granted, err = m.waitTurn(ctx, sub, key)
		sub.Close()
		if err != nil {
			m.leaveDetached(op, resource, n)
			return err
		}
	}
}

// holdPull runs work as the holder of the key and unlocks with its outcome.
func (m *Manager) holdPull(ctx context.Context, op, resource string, n Node, have func() bool, work func(context.Context) error) error {
	if have() { // done by the holder before us, between our wake-up and our try
		m.unlockDetached(op, resource, n, nil)
		return nil
	}
	stop := m.keepLease(ctx, op, resource, n)
	err := work(ctx)
	stop()
	m.unlockDetached(op, resource, n, err)
	return err
}

// waitTurn waits for n's next event on key: granted when the lock passed to
// n. It also returns (to ask again) when the subscription was cut off or
// after a lease without news: the state's events are delivered at most once
// (Redis pub/sub), and asking again tells the standing and keeps the place.
func (m *Manager) waitTurn(ctx context.Context, sub *Subscription, key string) (granted bool, err error) {
	recheck := time.NewTimer(m.lim.Lease)
	defer recheck.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-recheck.C:
			return false, nil
		case e, ok := <-sub.C:
			if !ok {
				return false, nil
			}
			if e.Key != key {
				continue // the node's other keys
			}
			return e.Type == EventGranted, nil
		}
	}
}

// keepLease heart-beats the key every third of a lease until stop is called.
// A lost lease is not fatal to the work: the lock passed on, and at worst a
// second node does the same work.
func (m *Manager) keepLease(ctx context.Context, op, resource string, n Node) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick.Every(ctx, max(m.lim.Lease/3, time.Millisecond), func(ctx context.Context) {
			if _, err := m.Heartbeat(ctx, op, resource, n); errs.Is(err, errs.Conflict) {
				cancel() // lost: nothing left to renew
			}
		})
	}()
	return func() { cancel(); <-done }
}

// unlockDetached unlocks even when the caller's context ended, so that an
// interrupted holder hands over at once instead of after its lease.
func (m *Manager) unlockDetached(op, resource string, n Node, failure error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Unlock(ctx, op, resource, n, failure); err != nil && !errs.Is(err, errs.Conflict) {
		m.log.Warn("lock: pull unlock", "key", Key(op, resource), "err", err)
	}
}

// errLeft is the failure a waiter leaving the queue unlocks with: a granted
// waiter passes the lock on instead of keeping it for a lease.
var errLeft = errors.New("waiter left")

func (m *Manager) leaveDetached(op, resource string, n Node) {
	m.unlockDetached(op, resource, n, errLeft)
}

// uncoordinated logs the first pull the lock service could not coordinate
// since it last could.
// (During a Redis outage the Redis watch's line says it: debug here.)
func (m *Manager) uncoordinated(key string, err error) {
	m.pullEdge.Failed(context.Background(), m.log, slog.LevelWarn,
		"lock: the lock service cannot coordinate pulls; fetching without it until it can", err, "key", key)
}

func (m *Manager) coordinated() {
	m.pullEdge.OK(context.Background(), m.log, "lock: the lock service coordinates pulls again")
}

// Puller pulls resources of one scope as one node: Pull(ctx, name, …) is
// M.Pull on op PullOp and resource Scope+name (dedup.Puller is one).
type Puller struct {
	M     *Manager
	Scope string // e.g. "cache:"
	Node  Node
}

// Pull is Manager.Pull on the scoped resource.
func (p Puller) Pull(ctx context.Context, name string, have func() bool, work func(context.Context) error) error {
	return p.M.Pull(ctx, PullOp, p.Scope+name, p.Node, have, work)
}
