package quota_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/quota"
)

func redisEnv(t *testing.T) *env { return newEnv(t, impls[1]) }

// While Redis is down every call fails with Unavailable (503), never
// succeeds uncounted; an empty Redis after restart says ErrStateLost until
// Reconcile, which ends exact.
func TestRedisDownThenRestartedEmpty(t *testing.T) {
	e := redisEnv(t)
	u := e.user("ann", 1000)
	e.must(e.initSession(u, up(1), 100))
	e.must(e.chunk(u, up(1), 0, 10))
	e.drain()
	e.must(e.chunk(u, up(1), 1, 10)) // pending when Redis dies

	e.redis.Kill()
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	_, err := e.l.Reserve(ctx, u, up(2), 1)
	wantKind(t, err, errs.Unavailable)
	wantKind(t, e.l.Chunk(ctx, u, up(1), 2, 10), errs.Unavailable)
	_, err = e.l.Commit(ctx, u, up(1), 100)
	wantKind(t, err, errs.Unavailable)
	_, err = e.l.ScanDue(ctx, e.clock.Now())
	wantKind(t, err, errs.Unavailable)
	wantKind(t, e.l.Ready(ctx), errs.Unavailable)
	if err := e.chunk(u, up(1), 2, 10); err == nil {
		t.Fatal("chunk accepted while the ledger is down")
	}

	e.redis.Restart()
	wantLost(t, e.l.Ready(ctx))
	_, err = e.l.Usage(ctx, u)
	wantLost(t, err)
	e.must(e.l.Reconcile(ctx, e))
	e.must(e.l.Ready(ctx))
	if g := e.usage(u); g.Uploading != 100 || g.Unfinished != 20 {
		t.Fatalf("reconciled %+v", g)
	}
	e.drain()
	if got := e.sqlUser(u).Unfinished; got != 20 {
		t.Fatalf("sqlite unfinished %d, want 20", got)
	}
	for i := 2; i < 10; i++ {
		e.must(e.chunk(u, up(1), i, 10))
	}
	_, _, err = e.finish(u, up(1), 100)
	e.must(err)
	e.drain()
	if su := e.sqlUser(u); su.Unfinished != 0 || su.Finished != 100 {
		t.Fatalf("sqlite %+v", su)
	}
}

// Run notices a Redis that came back empty and reconciles by itself.
func TestRedisRunHeals(t *testing.T) {
	e := redisEnv(t)
	u := e.user("ann", 1000)
	e.must(e.initSession(u, up(1), 100))
	e.must(e.chunk(u, up(1), 0, 40))
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() { quota.Run(ctx, e.l, e, e.clock, 5*time.Millisecond, nil); close(done) }()
	defer func() { cancel(); <-done }()
	e.redis.FlushAll()
	deadline := time.Now().Add(10 * time.Second)
	for {
		g, err := e.l.Usage(e.ctx, u)
		if err == nil {
			if g.Unfinished != 40 || g.Uploading != 100 {
				t.Fatalf("healed to %+v", g)
			}
			break
		}
		if !errors.Is(err, quota.ErrStateLost) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("Run did not reconcile within 10s")
		}
		time.Sleep(5 * time.Millisecond) // polling with a deadline
	}
}

// A daemon killed -9 loses nothing on a shared Redis: a new process's
// ledger sees the same state, and a flush it had claimed is re-sent by
// whoever scans after the lease.
func TestRedisDaemonKilled(t *testing.T) {
	e := redisEnv(t)
	u := e.user("ann", 1000)
	e.must(e.initSession(u, up(1), 100))
	e.must(e.chunk(u, up(1), 0, 30))
	e.sink.hooks(func([]quota.Flush) error { return errors.New("kill -9") }, nil)
	e.clock.Advance(delay)
	e.l.ScanDue(e.ctx, e.clock.Now())
	e.sink.hooks(nil, nil)

	e.l = e.newLedger() // the restarted daemon
	e.must(e.l.Ready(e.ctx))
	if g := e.usage(u); g.Unfinished != 30 || g.Uploading != 100 {
		t.Fatalf("after restart %+v", g)
	}
	e.drain()
	if got := e.sqlUser(u).Unfinished; got != 30 {
		t.Fatalf("sqlite unfinished %d, want 30", got)
	}
}

// Several daemons on one Redis scan at once while chunks arrive: each task
// flush is claimed once (no (upload, seq) twice), and SQLite ends exact.
func TestRedisDaemonsScanConcurrently(t *testing.T) {
	e := redisEnv(t)
	const users, sessions, chunks = 4, 24, 30
	ids := make([]int64, users)
	for i := range ids {
		ids[i] = e.user(fmt.Sprint("u", i), 0)
	}
	for s := 0; s < sessions; s++ {
		e.must(e.initSession(ids[s%users], up(s), chunks*chunkSize))
	}
	// A lease the fake clock cannot outrun during one flush: here a claim
	// seen twice would be a double claim, not a re-claim after expiry.
	cfg := e.cfg()
	cfg.Lease = 24 * time.Hour
	c := e.redis.Client()
	daemons := []quota.Ledger{quota.NewRedis(c, "", cfg), quota.NewRedis(c, "", cfg), quota.NewRedis(c, "", cfg)}
	// Scanners stop between scans (not by cancelling one mid-flush, which
	// would leave its claim to the lease).
	var stop atomic.Bool
	var scanners, writers sync.WaitGroup
	var scanErr error
	var mu sync.Mutex
	for _, d := range daemons {
		scanners.Add(1)
		go func() {
			defer scanners.Done()
			for !stop.Load() {
				if _, err := d.ScanDue(e.ctx, e.clock.Now()); err != nil {
					mu.Lock()
					scanErr = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	for w := 0; w < 4; w++ {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for c := 0; c < chunks; c++ {
				for s := w; s < sessions; s += 4 {
					d := daemons[(s+c)%len(daemons)]
					if err := d.Chunk(e.ctx, ids[s%users], up(s), c, chunkSize); err != nil {
						t.Error(err)
						return
					}
				}
				e.clock.Advance(time.Second) // tasks fall due while others are refreshed
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	scanners.Wait()
	e.clock.Advance(delay)
	for _, d := range daemons {
		_, err := d.ScanDue(e.ctx, e.clock.Now())
		e.must(err)
	}
	if scanErr != nil {
		t.Fatal(scanErr)
	}
	seen := map[string]bool{}
	for _, f := range e.sink.seen {
		k := fmt.Sprint(f.Upload, "/", f.Seq)
		if seen[k] {
			t.Fatalf("flush %s claimed twice", k)
		}
		seen[k] = true
	}
	if len(seen) < sessions {
		t.Fatalf("only %d flushes for %d sessions", len(seen), sessions)
	}
	for _, id := range ids {
		want := int64(sessions/users) * chunks * chunkSize
		if got := e.sqlUser(id).Unfinished; got != want {
			t.Fatalf("user %d sqlite unfinished %d, want %d", id, got, want)
		}
	}
	t.Logf("%d chunks → %d flushes, %d users-table writes", sessions*chunks, len(e.sink.seen), e.sink.Writes())
}

// Two daemons' Guards on one Redis: daemon A's hold (a PUT streaming to it)
// survives daemon B's start (its Reconcile) as long as A renews it on its
// rounds (Tick), here past several of its first leases; A's commit then finds
// it. When A stops renewing (it died), B's next Reconcile after the lease
// gives the space back. Time is the injected clock throughout.
func TestRedisGuardsKeepEachOthersHolds(t *testing.T) {
	e := redisEnv(t)
	const mib = 1 << 20
	u := e.user("ann", 200*mib)
	guard := func() *quota.Guard {
		g := quota.NewGuard(e.newLedger(), e.sink.SQLiteSink, nil)
		g.SetTruth(e)
		g.SetHoldLease(e.clock, time.Minute)
		return g
	}
	a, b := guard(), guard()
	h := a.NewHold(u)
	e.must(h.Grow(e.ctx, 150*mib))
	for range 4 {
		e.clock.Advance(40 * time.Second)
		a.Tick(e.ctx, e.clock.Now()) // renews: past half its lease
		e.must(b.Reconcile(e.ctx))   // B starts
		if got := e.usage(u); got.Uploading != 150*mib {
			t.Fatalf("after B's reconcile: %+v; want A's 150 MiB hold kept", got)
		}
		wantKind(t, b.NewHold(u).Grow(e.ctx, 100*mib), errs.Quota)
	}
	done := a.Step()
	h.CommitInStep(e.ctx, 150*mib)
	done()
	if got := e.usage(u); got.Finished != 150*mib || got.Uploading != 0 {
		t.Fatalf("A's commit of its hold: %+v; want 150 MiB finished (the ledger knew the hold)", got)
	}

	dead := a.NewHold(u)
	e.must(dead.Grow(e.ctx, 40*mib))
	e.clock.Advance(61 * time.Second) // A died: no renewal
	e.must(b.Reconcile(e.ctx))
	if got := e.usage(u); got.Uploading != 0 {
		t.Fatalf("a dead daemon's hold past its lease: %+v; want dropped", got)
	}
}
