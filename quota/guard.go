package quota

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"netdisk/internal/redishealth"
)

// Guard is how the daemon uses a Ledger. It adds three things the
// ledger alone cannot know:
//
//   - Steps. Every SQLite change that moves a user's figures and the ledger
//     call that mirrors it run inside one Step (a shared lock); Reconcile takes
//     the lock exclusively. So Reconcile never reads SQLite between a change
//     and its ledger update, and the rebuilt ledger neither misses nor
//     double-counts it. (This holds within one daemon; see Reconcile.)
//   - Holds: reservations for bytes that enter outside upload sessions
//     (WebDAV PUT, the one-request upload, COPY). They are sessions of the
//     ledger that SQLite never sees, so the Guard keeps them and hands them to
//     Reconcile beside the open upload sessions: a Reconcile in the middle of
//     a PUT keeps the PUT's reservation. Another node's Reconcile cannot
//     know them, so each hold is leased in the ledger (Ledger.Hold) and
//     renewed by RunHeal while its bytes stream: a Reconcile anywhere keeps
//     a hold whose lease runs, and drops it once its node has stopped
//     renewing it for a whole lease (the node died).
//   - Repair by re-deriving. When a ledger update after a committed SQLite
//     change fails (Redis unreachable at that instant), the ledger is only
//     ever left on the safe side (a reservation not yet released, a delete
//     not yet subtracted); the Guard marks itself dirty and Run reconciles
//     from SQLite as soon as the ledger answers again.
type Guard struct {
	l    Ledger
	sink *SQLiteSink
	log  *slog.Logger

	mu sync.RWMutex // read: a Step; write: Reconcile

	hmu   sync.Mutex
	holds map[string]Session // open hold parts, by ledger upload id
	truth Truth

	owner  string // hold ids of this node, across its restarts (SetOwner)
	prefix string // hold ids of this process: never an upload id, never another daemon's
	seq    atomic.Int64
	dirty  atomic.Bool

	clock     Clock
	holdLease time.Duration

	// The loops' failures are logged by their edges (redishealth.Edge),
	// not once a second.
	readyEdge, renewEdge, flushEdge, expireEdge redishealth.Edge

	flushedAt    atomic.Int64 // unix ns of the last Flush whose scan succeeded; 0 before one
	flushedTasks atomic.Int64 // tasks written to the database by this process's Flushes
}

// FlushStats tells how current the database's unfinished bytes are: when
// this process last scanned the due tasks successfully (zero if it never
// did: it does not run the flushes, or the ledger has been away since its
// start) and how many tasks its flushes wrote. The time since the last
// flush is the ledger's lag beyond the tasks' own delay.
func (g *Guard) FlushStats() (last time.Time, tasks int64) {
	if ns := g.flushedAt.Load(); ns != 0 {
		last = time.Unix(0, ns)
	}
	return last, g.flushedTasks.Load()
}

// DefaultHoldLease is how long a hold outlives its node's last renewal:
// far beyond a renewal interval (RunHeal's, a second in the daemon) and a
// Redis blip, so a live PUT never loses its hold; short enough that a dead
// node's holds give their space back soon after.
const DefaultHoldLease = 2 * time.Minute

// SetHoldLease sets the clock holds are leased on and the lease (default:
// the system clock, DefaultHoldLease). Call it before the first hold.
func (g *Guard) SetHoldLease(clock Clock, lease time.Duration) {
	if clock != nil {
		g.clock = clock
	}
	if lease > 0 {
		g.holdLease = lease
	}
}

// NewGuard wraps l, whose sink is sink. Call SetTruth before Reconcile.
func NewGuard(l Ledger, sink *SQLiteSink, log *slog.Logger) *Guard {
	if log == nil {
		log = slog.Default()
	}
	g := &Guard{l: l, sink: sink, log: log, holds: map[string]Session{}, clock: systemClock{}, holdLease: DefaultHoldLease}
	g.SetOwner(randomHex())
	return g
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// SetOwner names this node's holds; call it before the first hold. owner
// (letters and digits) must be the node's own and stable across its
// restarts (the daemon keeps one in its data directory): a Reconcile then
// takes this node's holds from this process's list alone, so the holds a
// killed process left go at the next start rather than a lease later, and
// a hold whose commit the ledger missed does not linger. Without it, the
// owner is this process.
func (g *Guard) SetOwner(owner string) {
	g.owner = "h-" + owner + "-"
	g.prefix = g.owner + randomHex() + "-"
}

// SetTruth sets the open upload sessions (drive.Drive.OpenSessions) Reconcile reads.
func (g *Guard) SetTruth(t Truth) {
	g.hmu.Lock()
	g.truth = t
	g.hmu.Unlock()
}

// Ledger returns the wrapped ledger (call its session methods inside a Step).
func (g *Guard) Ledger() Ledger { return g.l }

// Step starts a SQLite change and its ledger update; call the returned
// function when both are done. Steps do not nest.
func (g *Guard) Step() (done func()) {
	g.mu.RLock()
	return g.mu.RUnlock
}

// MarkDirty asks Run to reconcile: a ledger update after a committed SQLite
// change failed.
func (g *Guard) MarkDirty(op string, err error) {
	if err == nil {
		return
	}
	g.log.Log(context.Background(), redishealth.Level(err, slog.LevelWarn), "quota: ledger update failed after the database commit; will reconcile", "op", op, "err", err)
	g.dirty.Store(true)
}

// OpenSessions is the truth Reconcile rebuilds from: the open upload sessions
// and this process's holds.
func (g *Guard) OpenSessions(ctx context.Context) ([]Session, error) {
	g.hmu.Lock()
	t := g.truth
	g.hmu.Unlock()
	var out []Session
	if t != nil {
		var err error
		if out, err = t.OpenSessions(ctx); err != nil {
			return nil, err
		}
	}
	g.hmu.Lock()
	for _, h := range g.holds {
		out = append(out, h)
	}
	g.hmu.Unlock()
	return out, nil
}

// Reconcile rebuilds the ledger from SQLite and the holds, with no Step in
// progress. With several daemons sharing one Redis, a Step of another daemon
// is not excluded: a change it commits during the rebuild may be counted
// short or twice until its next failed update marks it dirty or the next
// Reconcile; SQLite's own check (finished <= total in every commit) holds
// regardless.
func (g *Guard) Reconcile(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.dirty.Store(false)
	if err := g.l.Reconcile(ctx, guardTruth{g}); err != nil {
		g.dirty.Store(true)
		return err
	}
	return nil
}

type guardTruth struct{ g *Guard }

func (t guardTruth) OpenSessions(ctx context.Context) ([]Session, error) {
	return t.g.OpenSessions(ctx)
}

func (t guardTruth) OwnsHold(upload string) bool { return strings.HasPrefix(upload, t.g.owner) }

// Run keeps the ledger healthy and flushes it every interval: Heal then
// Flush, and prunes settled flush records every hour (records older than an
// hour: far beyond any lease). It is RunHeal and RunFlush in one loop, for a
// daemon alone on its database.
//
// Nodes sharing one database and one Redis split it (daemon/daemon.go):
//   - RunHeal on every node. Only this process knows that one of its own
//     ledger updates failed (dirty) and which holds it has open (a
//     Reconcile rebuilds from the database plus the holds of the process
//     that runs it), and every node's requests answer 503 while the shared
//     ledger's state is lost, so each checks and repairs as soon as it can.
//   - RunFlush on one node at a time, under a lease. It writes the shared
//     ledger's coalesced chunk counts into the shared database and prunes
//     the database's settled records: work on shared state that one node
//     does for all. (Flushing from several nodes would still be exact, the
//     claims are leased and the writes sequenced, see the package doc; it
//     would only multiply the scans and the database writes' contention.)
//     A holder's death delays flushes by a lease, never loses one: its
//     claims are re-sent after the claim lease by the next holder.
func (g *Guard) Run(ctx context.Context, clock Clock, every time.Duration) {
	g.run(ctx, clock, every, true, true)
}

// RunHeal is Run's repair half: Heal every interval until ctx ends.
func (g *Guard) RunHeal(ctx context.Context, every time.Duration) {
	g.run(ctx, nil, every, true, false)
}

// RunFlush is Run's shared half: Flush every interval and prune every hour
// until ctx ends.
func (g *Guard) RunFlush(ctx context.Context, clock Clock, every time.Duration) {
	g.run(ctx, clock, every, false, true)
}

func (g *Guard) run(ctx context.Context, clock Clock, every time.Duration, heal, flush bool) {
	if clock == nil {
		clock = systemClock{}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	lastPrune := clock.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if heal && !g.Heal(ctx) {
			continue
		}
		if heal {
			g.RenewHolds(ctx)
		}
		if !flush {
			continue
		}
		g.Flush(ctx, clock.Now())
		if now := clock.Now(); g.sink != nil && now.Sub(lastPrune) >= time.Hour {
			lastPrune = now
			if _, err := g.sink.PruneSettled(ctx, now.Add(-time.Hour)); err != nil && ctx.Err() == nil {
				g.log.Warn("quota: prune", "err", err)
			}
		}
	}
}

// Tick is one round of Run: Heal, renew the holds, then Flush what is due
// at now.
func (g *Guard) Tick(ctx context.Context, now time.Time) {
	if g.Heal(ctx) {
		g.RenewHolds(ctx)
		g.Flush(ctx, now)
	}
}

// RenewHolds renews the lease of each open hold of this process that has
// run half its course. A hold the ledger no longer knows (its state was
// lost, or a Reconcile dropped it) marks the Guard dirty: Heal rebuilds the
// ledger with this process's holds in the truth.
func (g *Guard) RenewHolds(ctx context.Context) {
	now := g.clock.Now()
	g.hmu.Lock()
	var due []Session
	for _, h := range g.holds {
		if h.Lease.Sub(now) < g.holdLease/2 {
			due = append(due, h)
		}
	}
	g.hmu.Unlock()
	for _, h := range due {
		until := now.Add(g.holdLease)
		ok, err := g.l.Renew(ctx, h.User, h.Upload, until)
		if err != nil {
			if ctx.Err() == nil {
				g.renewEdge.Failed(ctx, g.log, slog.LevelWarn, "quota: cannot renew holds", err, "hold", h.Upload)
			}
			return // the ledger is away: the next round tries again
		}
		g.renewEdge.OK(ctx, g.log, "quota: holds renewed again")
		if !ok {
			g.hmu.Lock()
			_, open := g.holds[h.Upload] // not ended meanwhile
			g.hmu.Unlock()
			if open {
				g.MarkDirty("Renew", errors.New("hold "+h.Upload+" unknown to the ledger"))
			}
			continue
		}
		g.hmu.Lock()
		if cur, open := g.holds[h.Upload]; open {
			cur.Lease = until
			g.holds[h.Upload] = cur
		}
		g.hmu.Unlock()
	}
}

// Heal reconciles when an update of this process failed (dirty) or the
// ledger lost its state; false when the ledger is not usable yet.
func (g *Guard) Heal(ctx context.Context) bool {
	lost := false
	if !g.dirty.Load() {
		err := g.l.Ready(ctx)
		if err == nil {
			g.readyEdge.OK(ctx, g.log, "quota: ledger answers again")
			return true
		}
		if !errors.Is(err, ErrStateLost) {
			if ctx.Err() == nil {
				g.readyEdge.Failed(ctx, g.log, slog.LevelWarn, "quota: ledger unavailable", err)
			}
			return false
		}
		g.log.Warn("quota: ledger state lost, reconciling")
		lost = true
	}
	if err := g.Reconcile(ctx); err != nil {
		if ctx.Err() == nil {
			g.readyEdge.Failed(ctx, g.log, slog.LevelWarn, "quota: cannot reconcile", err)
		}
		return false
	}
	g.readyEdge.OK(ctx, g.log, "quota: ledger answers again")
	// After a lost state the news; after a failed update (Redis away for
	// a moment, which the Redis watch told) routine.
	lvl := slog.LevelDebug
	if lost {
		lvl = slog.LevelInfo
	}
	g.log.Log(ctx, lvl, "quota: reconciled from the database")
	return true
}

// Flush writes the tasks due at now to the database and releases the holds
// whose lease ended (their nodes died). A ledger that lost its state is
// Heal's to repair (on every node): Flush only says so.
func (g *Guard) Flush(ctx context.Context, now time.Time) {
	n, err := g.l.ScanDue(ctx, now)
	if err == nil {
		g.flushedAt.Store(now.UnixNano())
		g.flushedTasks.Add(int64(n))
		g.flushEdge.OK(ctx, g.log, "quota: flushes run again")
	}
	if err != nil && ctx.Err() == nil {
		if errors.Is(err, ErrStateLost) {
			g.log.Debug("quota: flush waits for the ledger to be reconciled", "err", err)
			return
		}
		g.flushEdge.Failed(ctx, g.log, slog.LevelWarn, "quota: cannot flush", err)
	}
	n, err = g.l.ExpireHolds(ctx, now)
	switch {
	case err == nil:
		g.expireEdge.OK(ctx, g.log, "quota: holds expire again")
	case ctx.Err() == nil && !errors.Is(err, ErrStateLost):
		g.expireEdge.Failed(ctx, g.log, slog.LevelWarn, "quota: cannot expire holds", err)
	}
	if n > 0 {
		g.log.Info("quota: released holds whose node stopped renewing them", "holds", n)
	}
}

// Usage returns the user's figures.
func (g *Guard) Usage(ctx context.Context, user int64) (Usage, error) { return g.l.Usage(ctx, user) }

// Changed tells the ledger that a committed SQLite change moved the user's
// finished bytes by delta outside any hold (a delete, a move over a file).
// Call it inside the Step of the change.
func (g *Guard) Changed(ctx context.Context, user, delta int64) {
	if delta != 0 {
		g.MarkDirty("AddFinished", g.l.AddFinished(ctx, user, delta))
	}
}

// Hold is a reservation for bytes entering a user's files outside an upload
// session. It may grow in parts (a body of unknown length); each part is a
// ledger session of its own.
type Hold struct {
	g        *Guard
	user     int64
	base     string
	parts    []Session
	reserved int64
}

// NewHold starts an empty hold for user.
func (g *Guard) NewHold(user int64) *Hold {
	return &Hold{g: g, user: user, base: g.prefix + strconv.FormatInt(g.seq.Add(1), 36)}
}

// Reserved is the total reserved so far.
func (h *Hold) Reserved() int64 { return h.reserved }

// Grow reserves n more bytes under the admission rule: errs.Quota (507) when
// they do not fit, errs.Unavailable (503) when the ledger cannot answer. Call
// it outside a Step.
func (h *Hold) Grow(ctx context.Context, n int64) error {
	if n <= 0 {
		return nil
	}
	defer h.g.Step()()
	id := h.base + "." + strconv.Itoa(len(h.parts))
	until := h.g.clock.Now().Add(h.g.holdLease)
	if _, err := h.g.l.Hold(ctx, h.user, id, n, until); err != nil {
		return err
	}
	s := Session{User: h.user, Upload: id, Declared: n, Lease: until}
	h.g.hmu.Lock()
	h.g.holds[id] = s
	h.g.hmu.Unlock()
	h.parts = append(h.parts, s)
	h.reserved += n
	return nil
}

// CommitInStep ends the hold after a committed change that moved the user's
// finished bytes by delta (at most Reserved when positive): the reservation
// becomes finished bytes, and a negative delta (a smaller overwrite) is
// subtracted. Call it inside the Step of the change.
func (h *Hold) CommitInStep(ctx context.Context, delta int64) {
	rest := delta
	for _, p := range h.parts {
		c := min(max(rest, 0), p.Declared)
		rest -= c
		r, err := h.g.l.Commit(ctx, h.user, p.Upload, c)
		if err == nil && !r.Found {
			err = errors.New("hold " + p.Upload + " unknown to the ledger")
		}
		h.g.MarkDirty("Commit", err)
	}
	h.forget()
	h.g.Changed(ctx, h.user, rest)
}

// Release gives the reservation back (the write failed or was abandoned).
// Call it outside a Step; it is a no-op on an empty or ended hold.
func (h *Hold) Release(ctx context.Context) {
	if len(h.parts) == 0 {
		return
	}
	defer h.g.Step()()
	ctx = context.WithoutCancel(ctx)
	for _, p := range h.parts {
		_, err := h.g.l.Release(ctx, h.user, p.Upload)
		h.g.MarkDirty("Release", err)
	}
	h.forget()
}

func (h *Hold) forget() {
	h.g.hmu.Lock()
	for _, p := range h.parts {
		delete(h.g.holds, p.Upload)
	}
	h.g.hmu.Unlock()
	h.parts, h.reserved = nil, 0
}
