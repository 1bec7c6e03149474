package quota_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/quota"
)

// The conformance suite: every case runs against the embedded ledger and a
// real redis-server.
var conformance = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	{"AdmissionRule", func(t *testing.T, e *env) {
		u := e.user("ann", 100)
		e.must(e.initSession(u, up(1), 60))
		err := e.initSession(u, up(2), 50)
		wantKind(t, err, errs.Quota)
		if !strings.Contains(errs.Message(err), "40 B free, 50 B needed") {
			t.Fatalf("message %q does not say what is free", errs.Message(err))
		}
		e.must(e.initSession(u, up(3), 40))
		wantKind(t, e.initSession(u, up(4), 1), errs.Quota)
		if got := e.usage(u); got.Uploading != 100 || got.Committed() != 100 || got.Free() != 0 {
			t.Fatalf("usage %+v", got)
		}
	}},
	{"ReserveIsIdempotent", func(t *testing.T, e *env) {
		u := e.user("ann", 100)
		e.must(e.initSession(u, up(1), 60))
		e.must(e.initSession(u, up(1), 60)) // a retried init
		if got := e.usage(u).Uploading; got != 60 {
			t.Fatalf("uploading %d after a retried reserve, want 60", got)
		}
		wantKind(t, e.initSession(u, up(1), 61), errs.Conflict)
	}},
	{"UnlimitedTotal", func(t *testing.T, e *env) {
		u := e.user("ann", 0)
		e.must(e.initSession(u, up(1), 1<<50))
		if e.usage(u).Free() != -1 {
			t.Fatal("unlimited user has a limit")
		}
	}},
	{"ChunksCoalesceIntoOneWrite", func(t *testing.T, e *env) {
		u := e.user("ann", 1000)
		e.must(e.initSession(u, up(1), 100))
		for i := 0; i < 10; i++ {
			e.must(e.chunk(u, up(1), i, 10))
			e.clock.Advance(delay / 2) // chunks keep coming before the task is due
			n, err := e.l.ScanDue(e.ctx, e.clock.Now())
			e.must(err)
			if n != 0 {
				t.Fatalf("chunk %d: %d flushes while chunks keep coming", i, n)
			}
		}
		if got := e.usage(u).Unfinished; got != 100 {
			t.Fatalf("ledger unfinished %d, want 100", got)
		}
		if got := e.sqlUser(u).Unfinished; got != 0 {
			t.Fatalf("sqlite unfinished %d before the task is due", got)
		}
		e.clock.Advance(delay)
		n, err := e.l.ScanDue(e.ctx, e.clock.Now())
		e.must(err)
		if n != 1 || e.sink.Writes() != 1 {
			t.Fatalf("%d flushes, %d users writes for 10 chunks; want 1 and 1", n, e.sink.Writes())
		}
		if got := e.sqlUser(u).Unfinished; got != 100 {
			t.Fatalf("sqlite unfinished %d, want 100", got)
		}
		// Nothing left: another scan writes nothing.
		e.clock.Advance(lease)
		if n, _ := e.l.ScanDue(e.ctx, e.clock.Now()); n != 0 {
			t.Fatalf("%d flushes of a flushed task", n)
		}
	}},
	{"ChunkRules", func(t *testing.T, e *env) {
		u, v := e.user("ann", 1000), e.user("bob", 1000)
		e.must(e.initSession(u, up(1), 25))
		e.must(e.chunk(u, up(1), 0, 10))
		e.must(e.chunk(u, up(1), 0, 10)) // retried chunk: counted once
		e.must(e.chunk(u, up(1), 1, 10))
		wantKind(t, e.chunk(u, up(1), 2, 10), errs.TooLarge)
		wantKind(t, e.chunk(v, up(1), 2, 5), errs.Permission)
		wantKind(t, e.chunk(u, up(9), 0, 5), errs.NotFound)
		wantKind(t, e.chunk(u, up(1), -1, 5), errs.Invalid)
		if got := e.usage(u).Unfinished; got != 20 {
			t.Fatalf("unfinished %d, want 20", got)
		}
	}},
	{"MergeCompensatesExactly", func(t *testing.T, e *env) {
		u := e.user("ann", 1000)
		e.must(e.initSession(u, up(1), 40))
		e.must(e.chunk(u, up(1), 0, 10))
		e.must(e.chunk(u, up(1), 1, 10))
		e.drain() // 20 flushed
		e.must(e.chunk(u, up(1), 2, 10))
		e.must(e.chunk(u, up(1), 3, 10)) // 20 pending
		settled, rel, err := e.finish(u, up(1), 40)
		e.must(err)
		if settled != 20 || rel.Flushed != 20 || rel.Pending != 20 || rel.InFlight != 0 || !rel.Found {
			t.Fatalf("settled %d, released %+v; want 20 flushed, 20 pending", settled, rel)
		}
		e.drain() // the dropped pending bytes must never reach SQLite
		if su := e.sqlUser(u); su.Unfinished != 0 || su.Finished != 40 {
			t.Fatalf("sqlite %+v, want unfinished 0, finished 40", su)
		}
		if got := e.usage(u); got != (quota.Usage{Total: 1000, Finished: 40}) {
			t.Fatalf("usage %+v", got)
		}
		// A retried merge is a no-op.
		rel, err = e.l.Commit(e.ctx, u, up(1), 40)
		e.must(err)
		if rel.Found || e.usage(u).Finished != 40 {
			t.Fatalf("second commit changed something: %+v", rel)
		}
	}},
	{"MergeBeyondDeclaredRefused", func(t *testing.T, e *env) {
		u := e.user("ann", 100)
		e.must(e.initSession(u, up(1), 40))
		_, err := e.l.Commit(e.ctx, u, up(1), 41)
		wantKind(t, err, errs.TooLarge)
	}},
	{"AbortGivesSpaceBack", func(t *testing.T, e *env) {
		u := e.user("ann", 100)
		e.must(e.initSession(u, up(1), 100))
		e.must(e.chunk(u, up(1), 0, 30))
		e.drain()
		wantKind(t, e.initSession(u, up(2), 1), errs.Quota)
		settled, rel, err := e.finish(u, up(1), -1)
		e.must(err)
		if settled != 30 || rel.Flushed != 30 || rel.Declared != 100 {
			t.Fatalf("settled %d released %+v", settled, rel)
		}
		e.must(e.initSession(u, up(2), 100))
		if su := e.sqlUser(u); su.Unfinished != 0 || su.Finished != 0 {
			t.Fatalf("sqlite %+v", su)
		}
	}},
	{"AddFinishedObeysTheRule", func(t *testing.T, e *env) {
		u := e.user("ann", 100)
		e.must(e.initSession(u, up(1), 60))
		e.must(e.l.AddFinished(e.ctx, u, 40))
		wantKind(t, e.l.AddFinished(e.ctx, u, 1), errs.Quota)
		e.must(e.l.AddFinished(e.ctx, u, -10))
		e.must(e.l.SetTotal(e.ctx, u, 50)) // lowered below usage: refuse new, keep old
		wantKind(t, e.initSession(u, up(2), 1), errs.Quota)
		if got := e.usage(u); got.Finished != 30 || got.Uploading != 60 || got.Total != 50 || got.Free() != 0 {
			t.Fatalf("usage %+v", got)
		}
	}},
	{"UserCreatedAfterReconcile", func(t *testing.T, e *env) {
		total := 10 + meta.EntryCharge("four") // the file's entry is charged too
		u := e.user("late", total)
		_, err := e.db.CommitFile(e.ctx, u, "/four", meta.NewFile{Size: 4})
		e.must(err)
		if got := e.usage(u); got.Total != total || got.Finished != total-6 {
			t.Fatalf("usage %+v, want it loaded from SQLite (the file and its entry)", got)
		}
		wantKind(t, e.initSession(u, up(1), 7), errs.Quota)
	}},
	{"ConcurrentReservesNeverOvercommit", func(t *testing.T, e *env) {
		u := e.user("ann", 100)
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted := 0
		for i := 0; i < 40; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.l.Reserve(e.ctx, u, up(i), 10)
				if err == nil {
					mu.Lock()
					admitted++
					mu.Unlock()
				} else if !errs.Is(err, errs.Quota) {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if admitted != 10 || e.usage(u).Uploading != 100 {
			t.Fatalf("%d admitted, usage %+v; want 10 and 100", admitted, e.usage(u))
		}
	}},
	{"ReleaseDuringInFlightFlush", func(t *testing.T, e *env) {
		// A scanner has claimed the task and is about to write SQLite when
		// the session is aborted: the flush must land fenced out, or before
		// Settle and be subtracted by it — never leave bytes behind.
		u := e.annReceived20()
		var rel quota.Released
		e.sink.hooks(func([]quota.Flush) error {
			e.sink.hooks(nil, nil)
			var err error
			_, rel, err = e.finish(u, up(1), -1)
			return err
		}, nil)
		e.clock.Advance(delay)
		_, err := e.l.ScanDue(e.ctx, e.clock.Now())
		e.must(err)
		if rel.InFlight != 20 || rel.Flushed != 0 {
			t.Fatalf("released %+v, want 20 in flight", rel)
		}
		e.drain()
		if su := e.sqlUser(u); su.Unfinished != 0 {
			t.Fatalf("sqlite unfinished %d after abort, want 0", su.Unfinished)
		}
	}},
	{"ScannerDiesBeforeCommit", func(t *testing.T, e *env) {
		u := e.annReceived20()
		e.sink.hooks(func([]quota.Flush) error { return errors.New("daemon died") }, nil)
		e.clock.Advance(delay)
		if _, err := e.l.ScanDue(e.ctx, e.clock.Now()); err == nil {
			t.Fatal("failed flush reported success")
		}
		e.sink.hooks(nil, nil)
		// Leased: another scanner does not take it before the lease ends...
		if n, err := e.peer().ScanDue(e.ctx, e.clock.Now()); n != 0 || err != nil {
			t.Fatalf("leased task taken: %d, %v", n, err)
		}
		// ...and re-sends it after.
		e.clock.Advance(lease)
		if n, err := e.peer().ScanDue(e.ctx, e.clock.Now()); n != 1 || err != nil {
			t.Fatalf("expired lease not re-claimed: %d, %v", n, err)
		}
		if got := e.sqlUser(u).Unfinished; got != 20 {
			t.Fatalf("sqlite unfinished %d, want 20", got)
		}
	}},
	{"ScannerDiesAfterCommit", func(t *testing.T, e *env) {
		// SQLite committed but the acknowledgement never came: the re-sent
		// flush (same sequence number) must not count twice.
		u := e.annReceived20()
		e.sink.hooks(nil, func([]quota.Flush) error { return errors.New("daemon died") })
		e.clock.Advance(delay)
		if _, err := e.l.ScanDue(e.ctx, e.clock.Now()); err == nil {
			t.Fatal("lost acknowledgement reported success")
		}
		e.sink.hooks(nil, nil)
		e.must(e.chunk(u, up(1), 1, 5))
		e.drain()
		e.drain()
		if got := e.sqlUser(u).Unfinished; got != 25 {
			t.Fatalf("sqlite unfinished %d, want 25", got)
		}
	}},
	{"StaleFlushLandsLate", func(t *testing.T, e *env) {
		// Scanner A stalls past its lease; B re-sends A's flush, then a newer
		// one; A's stale flush must not pull SQLite back.
		u := e.annReceived20()
		e.sink.hooks(func([]quota.Flush) error {
			e.sink.hooks(nil, nil)
			e.clock.Advance(lease + delay)
			if err := e.chunk(u, up(1), 1, 10); err != nil {
				return err
			}
			e.clock.Advance(lease + delay)
			_, err := e.peer().ScanDue(e.ctx, e.clock.Now())
			if got := e.sqlUser(u).Unfinished; got != 30 {
				t.Errorf("B flushed %d, want 30", got)
			}
			return err
		}, nil)
		e.clock.Advance(delay)
		_, err := e.l.ScanDue(e.ctx, e.clock.Now())
		e.must(err)
		if got := e.sqlUser(u).Unfinished; got != 30 {
			t.Fatalf("sqlite unfinished %d after a stale flush, want 30", got)
		}
	}},
	{"ReconcileAfterLostState", func(t *testing.T, e *env) {
		u, v := e.user("ann", 1000), e.user("bob", 300)
		e.must(e.initSession(u, up(1), 100))
		e.must(e.initSession(u, up(2), 100))
		e.must(e.initSession(v, up(3), 200))
		e.must(e.chunk(u, up(1), 0, 30))
		e.must(e.chunk(v, up(3), 0, 50))
		e.drain() // flushed: 30 and 50
		e.must(e.chunk(u, up(1), 1, 30))
		e.must(e.chunk(u, up(2), 0, 10))
		e.must(e.chunk(v, up(3), 1, 50)) // pending: 30+10 and 50
		_, _, err := e.finish(v, up(3), 200-100)
		e.must(err)
		e.must(e.initSession(v, up(4), 100))
		e.must(e.chunk(v, up(4), 0, 100))
		before := []quota.Usage{e.usage(u), e.usage(v)}

		e.lose()
		_, err = e.l.Reserve(e.ctx, u, up(5), 1)
		wantLost(t, err)
		wantLost(t, e.l.Chunk(e.ctx, u, up(1), 2, 1))
		_, err = e.l.ScanDue(e.ctx, e.clock.Now())
		wantLost(t, err)

		e.must(e.l.Reconcile(e.ctx, e))
		if after := []quota.Usage{e.usage(u), e.usage(v)}; after[0] != before[0] || after[1] != before[1] {
			t.Fatalf("reconciled %+v, before the loss %+v", after, before)
		}
		e.must(e.chunk(u, up(1), 1, 30)) // a retried chunk stays counted once
		e.drain()
		if su, sv := e.sqlUser(u), e.sqlUser(v); su.Unfinished != 70 || sv.Unfinished != 100 || sv.Finished != 100 {
			t.Fatalf("sqlite ann %+v bob %+v", su, sv)
		}
		for _, s := range []struct {
			u  int64
			id string
			n  int64
		}{{u, up(1), 60}, {u, up(2), 10}, {v, up(4), 100}} {
			_, _, err := e.finish(s.u, s.id, s.n)
			e.must(err)
		}
		e.drain()
		su, sv := e.sqlUser(u), e.sqlUser(v)
		if su.Unfinished != 0 || sv.Unfinished != 0 || su.Finished != 70 || sv.Finished != 200 {
			t.Fatalf("after merging all: sqlite ann %+v bob %+v", su, sv)
		}
		if g := e.usage(u); g.Uploading != 0 || g.Unfinished != 0 || g.Finished != 70 {
			t.Fatalf("ledger %+v", g)
		}
	}},
	{"ReconcileSettlesOrphans", func(t *testing.T, e *env) {
		// A crash after the session row was deleted but before Settle (a
		// bug or an old binary): Reconcile must not keep the flushed bytes.
		u := e.user("ann", 1000)
		e.must(e.initSession(u, up(1), 100))
		e.must(e.chunk(u, up(1), 0, 30))
		e.drain()
		e.hidden.Store(up(1), true)
		e.must(e.l.Reconcile(e.ctx, e))
		if su, g := e.sqlUser(u), e.usage(u); su.Unfinished != 0 || g.Uploading != 0 || g.Unfinished != 0 {
			t.Fatalf("sqlite %+v ledger %+v", su, g)
		}
	}},
	{"AttackManyAbandonedSessions", func(t *testing.T, e *env) {
		// Seed 2.2: a user opens uploads and never finishes them. They are
		// refused once finished + uploading reaches the total, and get the
		// space back when the sessions expire.
		const mib = 1 << 20
		u := e.user("mallory", 100*mib)
		e.must(e.initSession(u, up(0), 20*mib))
		e.must(e.chunk(u, up(0), 0, 20*mib))
		_, _, err := e.finish(u, up(0), 20*mib)
		e.must(err)
		opened := 0
		for i := 1; i <= 100; i++ {
			err := e.initSession(u, up(i), 10*mib)
			if errs.Is(err, errs.Quota) {
				break
			}
			e.must(err)
			e.must(e.chunk(u, up(i), 0, 4*mib)) // never finished
			opened++
		}
		if opened != 8 {
			t.Fatalf("%d abandoned sessions admitted, want 8", opened)
		}
		g := e.usage(u)
		if g.Finished+g.Uploading != 100*mib || g.Unfinished != 32*mib {
			t.Fatalf("usage %+v", g)
		}
		e.drain()
		if got := e.sqlUser(u).Unfinished; got != 32*mib {
			t.Fatalf("server's view in SQLite: unfinished %d, want 32 MiB", got)
		}
		for i := 1; i <= opened; i++ { // expiry
			_, _, err := e.finish(u, up(i), -1)
			e.must(err)
		}
		e.must(e.initSession(u, up(200), 80*mib))
		if su := e.sqlUser(u); su.Unfinished != 0 || su.Finished != 20*mib {
			t.Fatalf("sqlite %+v", su)
		}
	}},
}

// holdCases: a hold (bytes entering outside an upload session, such as a
// WebDAV PUT on another node) is listed by no truth, so a Reconcile keeps it
// while its lease runs, however often its node renews it, and drops it once
// its node has stopped renewing it for a whole lease.
var holdCases = []struct {
	name string
	run  func(t *testing.T, e *env)
}{
	{"ReconcileKeepsLiveHolds", func(t *testing.T, e *env) {
		const mib = 1 << 20
		u := e.user("ann", 200*mib)
		const other = "h-othernode-1.0"
		e.holdMinute(u, other, 150*mib)
		// A node starts and reconciles with a truth that cannot list
		// the hold: it is kept, so 100 MiB more do not fit.
		e.must(e.peer().Reconcile(e.ctx, e))
		if got := e.usage(u); got.Uploading != 150*mib {
			t.Fatalf("after a reconcile during the hold: %+v; want 150 MiB uploading", got)
		}
		wantKind(t, e.initSession(u, up(1), 100*mib), errs.Quota)
		// Renewed every 40 s, it outlives its first lease.
		for range 3 {
			e.clock.Advance(40 * time.Second)
			ok, err := e.l.Renew(e.ctx, u, other, e.clock.Now().Add(time.Minute))
			e.must(err)
			if !ok {
				t.Fatal("Renew of a live hold: not found")
			}
			e.must(e.peer().Reconcile(e.ctx, e))
		}
		wantKind(t, e.initSession(u, up(2), 100*mib), errs.Quota)
		// Its commit finds it.
		r, err := e.l.Commit(e.ctx, u, other, 150*mib)
		e.must(err)
		if !r.Found || r.Declared != 150*mib {
			t.Fatalf("commit of a hold kept by reconciles: %+v", r)
		}
	}},
	{"ReconcileDropsExpiredHolds", func(t *testing.T, e *env) {
		const mib = 1 << 20
		u := e.user("ann", 200*mib)
		const dead = "h-deadnode-1.0"
		e.holdMinute(u, dead, 150*mib)
		// Holding again (same size) renews it.
		e.clock.Advance(30 * time.Second)
		e.holdMinute(u, dead, 150*mib)
		e.clock.Advance(59 * time.Second)
		e.must(e.peer().Reconcile(e.ctx, e))
		if got := e.usage(u); got.Uploading != 150*mib {
			t.Fatalf("a hold within its renewed lease was dropped: %+v", got)
		}
		// Its node died: nobody renews it; a reconcile after its lease
		// drops it and the space is free again.
		e.clock.Advance(2 * time.Second)
		e.must(e.peer().Reconcile(e.ctx, e))
		if got := e.usage(u); got.Uploading != 0 {
			t.Fatalf("a hold past its lease survived a reconcile: %+v", got)
		}
		ok, err := e.l.Renew(e.ctx, u, dead, e.clock.Now().Add(time.Minute))
		e.must(err)
		if ok {
			t.Fatal("Renew of a dropped hold succeeded")
		}
		e.must(e.initSession(u, up(1), 100*mib))
		// An upload session is no hold: it cannot be renewed.
		if ok, err := e.l.Renew(e.ctx, u, up(1), e.clock.Now().Add(time.Minute)); err != nil || ok {
			t.Fatalf("Renew of an upload session: %v, %v", ok, err)
		}
	}},
	{"OwnerDropsItsUnlistedHolds", func(t *testing.T, e *env) {
		u := e.user("ann", 100)
		until := e.clock.Now().Add(time.Minute)
		_, err := e.l.Hold(e.ctx, u, "h-me-old-1.0", 30, until) // left by this node's killed process
		e.must(err)
		_, err = e.l.Hold(e.ctx, u, "h-other-1.0", 40, until)
		e.must(err)
		e.must(e.peer().Reconcile(e.ctx, ownerTruth{e, "h-me-"}))
		if got := e.usage(u); got.Uploading != 40 {
			t.Fatalf("after the owner's reconcile: %+v; want only the other node's 40 bytes held", got)
		}
	}},
	{"ExpireHoldsGivesTheSpaceBack", func(t *testing.T, e *env) {
		u := e.user("ann", 100)
		_, err := e.l.Hold(e.ctx, u, "h-dead-1.0", 60, e.clock.Now().Add(time.Minute))
		e.must(err)
		_, err = e.l.Hold(e.ctx, u, "h-live-1.0", 30, e.clock.Now().Add(time.Minute))
		e.must(err)
		e.must(e.initSession(u, up(1), 10))
		e.clock.Advance(40 * time.Second)
		if n, err := e.l.ExpireHolds(e.ctx, e.clock.Now()); err != nil || n != 0 {
			t.Fatalf("ExpireHolds within the leases: %d, %v", n, err)
		}
		ok, err := e.l.Renew(e.ctx, u, "h-live-1.0", e.clock.Now().Add(time.Minute))
		e.must(err)
		if !ok {
			t.Fatal("Renew of a live hold: not found")
		}
		e.clock.Advance(20 * time.Second) // the dead node's lease ends now
		n, err := e.l.ExpireHolds(e.ctx, e.clock.Now())
		e.must(err)
		if n != 1 {
			t.Fatalf("ExpireHolds after one lease ended: %d released, want 1", n)
		}
		if got := e.usage(u); got.Uploading != 40 {
			t.Fatalf("usage after the expiry: %+v; want 40 (the renewed hold and the session)", got)
		}
		if r, err := e.l.Commit(e.ctx, u, "h-dead-1.0", 60); err != nil || r.Found {
			t.Fatalf("commit of an expired hold: %+v, %v; want not found", r, err)
		}
		e.must(e.initSession(u, up(2), 60))
	}},
	{"HoldEndsLikeASession", func(t *testing.T, e *env) {
		u := e.user("ann", 100)
		_, err := e.l.Hold(e.ctx, u, "h-x-1.0", 60, e.clock.Now().Add(time.Minute))
		e.must(err)
		wantKind(t, e.initSession(u, up(1), 50), errs.Quota)
		if _, err := e.l.Hold(e.ctx, u, "h-x-2.0", 10, time.Time{}); !errs.Is(err, errs.Invalid) {
			t.Fatalf("a hold without a lease: %v", err)
		}
		r, err := e.l.Release(e.ctx, u, "h-x-1.0")
		e.must(err)
		if !r.Found {
			t.Fatal("release of a hold: not found")
		}
		// Released, it is gone for good: a reconcile within what was its
		// lease does not bring it back.
		e.must(e.peer().Reconcile(e.ctx, e))
		if got := e.usage(u); got.Uploading != 0 {
			t.Fatalf("usage after the release and a reconcile: %+v", got)
		}
	}},
}

// ownerTruth is the truth of a node whose holds are named prefix….
type ownerTruth struct {
	*env
	prefix string
}

func (o ownerTruth) OwnsHold(upload string) bool { return strings.HasPrefix(upload, o.prefix) }

func TestConformance(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			for _, c := range conformance {
				t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, im)) })
			}
			for _, c := range holdCases {
				t.Run(c.name, func(t *testing.T) { c.run(t, newEnv(t, im)) })
			}
		})
	}
}
