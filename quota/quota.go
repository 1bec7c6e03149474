// Package quota is netdisk's quota ledger (seed 001, sections 2.2–3.5): it
// decides whether a new upload session fits a user's quota, counts the bytes
// received by open sessions without writing SQLite on every chunk, and gives
// the space back when a session merges, is aborted or expires.
//
// It is not the source of truth: SQLite is (users, files, upload sessions).
// The ledger is a fast, atomic view that can always be rebuilt from SQLite
// with Reconcile, and it says so (errs.Unavailable) whenever its state may be
// wrong, so an upload fails with 503 rather than succeeding uncounted.
//
// # Figures
//
// Per user:
//   - Total: bytes allowed; 0 means unlimited.
//   - Finished: sum of the logical sizes of the user's files (the user's view),
//     with the metadata charge of their entries and properties
//     (meta/charge.go), which the daemon counts as bytes too.
//   - Uploading: sum of the sizes declared by the user's open sessions.
//   - Unfinished: bytes received by open sessions (the server's view of
//     partial uploads). Unfinished <= Uploading always: a session cannot
//     receive more than it declared.
//
// # Admission rule
//
// A new session of declared size S is admitted only if
//
//	Total == 0 || Finished + Uploading + S <= Total
//
// computed without overflow, and with Finished + Uploading + S <= MaxBytes
// in any case (see MaxBytes),
// and the check and the reservation (Uploading += S) are one atomic step (one
// Lua script in Redis, one mutex in process). Committed usage is
// Finished + Uploading; every operation keeps it <= Total:
//   - Reserve only admits within the rule above;
//   - Chunk refuses bytes beyond the declared size, so Unfinished never
//     exceeds the reservation that already counts it;
//   - Commit moves at most the declared size from Uploading to Finished in one
//     atomic step, so there is no instant where merged bytes are in neither;
//   - AddFinished (writes outside sessions) obeys the same rule for growth.
//
// Abandoned sessions keep their reservation until they expire (Release), so
// a user who opens many sessions and never finishes them is refused once
// Finished + Uploading reaches Total, and gets the space back on expiry.
//
// # Delayed flush (the seed's dynamic delayed task)
//
// Each open session is one task in a set ordered by due time (a Redis ZSET;
// a heap in process), so a scan reads only the tasks that are due. Every
// Chunk pushes the due time to now+Delay and grows the task's pending bytes;
// ScanDue claims due tasks and writes them to SQLite users.use_space_unfinished
// through a Sink, one write per task however many chunks it coalesced. A flush carries the session's absolute received count
// and a per-session sequence number, and the sink applies it only if its
// sequence is newer than the last one applied: a claim is held under a lease,
// so a scanner that dies between claim and commit is replaced after the lease
// by another that re-sends the same flush, and a flush is never applied twice
// nor lost — also with several daemons sharing one Redis. This replaces the
// seed's read-then-delete of section 3.5 (the race it describes cannot
// happen: claiming is one script, and the SQLite write is idempotent).
//
// # Integration (what callers must do)
//
// SQLite first, ledger second, except for admission:
//
//	init:   Reserve(user, upload, declared)          then create the session row
//	chunk:  Chunk(user, upload, index, n)            then mark the chunk held
//	merge:  SQLite tx { add file (finished += size); settle(user, upload); close session }
//	        then Commit(user, upload, size)
//	abort/expire: SQLite tx { settle(user, upload); close session }
//	        then Release(user, upload)
//	delete file / non-session write: SQLite tx, then AddFinished(user, ±n)
//	        (a non-session write of n bytes is better a leased Hold + Commit,
//	        renewed while its bytes arrive: Guard does it)
//	startup, and whenever an operation fails with ErrStateLost: Reconcile(truth)
//
// Chunk is idempotent per (upload, index): a retried or duplicated chunk is
// counted once. Commit and Release of an upload the ledger no longer knows are
// no-ops, so a retried merge is safe. The settlement subtracts from SQLite
// exactly what earlier flushes added for the upload (read from SQLite itself,
// in the transaction that closes the session: the metadata store does it in
// meta.MergeSession, DropSession and DropIdleSession) and fences later
// flushes of that upload out.
//
// With the ledger, only the flush records (the Sink's flushes and the
// settlements, meta/quota.go) write users.use_space_unfinished.
// The upload sessions follow this order in one place, where it is enforced:
// drive/sessions.go. Reserve(uid, sessionID, size) runs with the session id
// chosen before the row is inserted; the reservation is the whole declared
// size, also when the session replaces a file: its chunks sit beside that
// file until the merge, and the replaced file's bytes come back only when the
// merge commits. Chunk(uid, session, idx, n) runs before the transaction that
// records the chunk commits (the chunk index is needed); the settlement runs
// inside the transaction that merges or closes the session; after a merge,
// Commit(uid, session, max(growth, 0)) plus the guard's Changed(min(growth,
// 0)) for a smaller replaced file, after a close Release. Truth.OpenSessions
// is upload_sessions WHERE state = 'open' (id, user_id, size, received) with
// the idx of its session_chunks rows as Have (drive.Drive.OpenSessions).
package quota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"netdisk/errs"
	"netdisk/internal/redishealth"
	"netdisk/internal/tick"
)

// Usage is a user's figures as the ledger sees them.
type Usage struct {
	Total      int64 `json:"total"` // 0 = unlimited
	Finished   int64 `json:"finished"`
	Uploading  int64 `json:"uploading"`
	Unfinished int64 `json:"unfinished"`
}

// MaxBytes bounds every figure and every size the ledger accepts: 2^53-1,
// the largest integer a Lua number (a double, in the Redis scripts) holds
// exactly, so both ledgers compute every sum exactly and agree. A session,
// chunk or growth that would take a user's committed bytes past it is refused
// (Quota) even when the user is unlimited; a single size past it is TooLarge.
// The daemon's maximum file size (serve --max-file-size) is far below it.
const MaxBytes = 1<<53 - 1

// admits reports whether n more bytes fit u under the admission rule. Every
// operand is bounded first, so the sum cannot overflow int64.
func admits(u Usage, n int64) bool {
	if n < 0 || n > MaxBytes || u.Finished > MaxBytes || u.Uploading > MaxBytes ||
		u.Finished < -MaxBytes || u.Uploading < -MaxBytes {
		return false
	}
	sum := u.Finished + u.Uploading + n
	return sum <= MaxBytes && (u.Total <= 0 || sum <= u.Total)
}

// checkSize refuses a single size the ledger cannot count.
func checkSize(op string, what string, n int64) error {
	if n > MaxBytes || n < -MaxBytes {
		return errs.Errorf(op, errs.TooLarge, "%s of %d bytes is beyond what the ledger counts", what, n)
	}
	return nil
}

// checkReservation refuses a reservation (or hold) no ledger takes.
func checkReservation(op, upload string, declared int64) error {
	if declared < 0 || upload == "" {
		return errs.Errorf(op, errs.Invalid, "bad reservation %q of %d bytes", upload, declared)
	}
	return checkSize(op, "a reservation", declared)
}

// checkChunk refuses a chunk no ledger takes.
func checkChunk(op string, index int, n int64) error {
	if index < 0 || n < 0 {
		return errs.Errorf(op, errs.Invalid, "bad chunk %d of %d bytes", index, n)
	}
	return checkSize(op, "a chunk", n)
}

// ender is a ledger's one step that ends a session: a merge of size bytes
// (size >= 0) or a release (size -1). Commit and Release are written once
// on top of it (commit, release), so every ledger checks them alike.
type ender interface {
	end(ctx context.Context, op string, user int64, upload string, size int64) (Released, error)
}

func commit(ctx context.Context, l ender, user int64, upload string, size int64) (Released, error) {
	if size < 0 {
		return Released{}, errs.Errorf("quota.Commit", errs.Invalid, "negative size")
	}
	return l.end(ctx, "quota.Commit", user, upload, size)
}

func release(ctx context.Context, l ender, user int64, upload string) (Released, error) {
	return l.end(ctx, "quota.Release", user, upload, -1)
}

// Committed is the usage the admission rule bounds by Total.
func (u Usage) Committed() int64 { return u.Finished + u.Uploading }

// Free returns the bytes a new session may still declare, or -1 if unlimited.
func (u Usage) Free() int64 {
	if u.Total <= 0 {
		return -1
	}
	return max(u.Total-u.Committed(), 0)
}

// Released says what the ledger dropped when a session ended. SQLite's own
// record (the settlement) is authoritative for the unfinished bytes to subtract;
// Flushed equals it whenever no flush of the session was in flight.
type Released struct {
	Found    bool  // false: the ledger did not know the upload (already released)
	Declared int64 // reservation given back
	Received int64 // bytes that left Unfinished
	Flushed  int64 // bytes of this session already written to SQLite (acknowledged)
	InFlight int64 // claimed by a scanner, not acknowledged: in SQLite or fenced out by Settle
	Pending  int64 // never written to SQLite, dropped
}

// Session is an open upload session as SQLite (the truth) records it, or a
// hold a Guard keeps (Lease set).
type Session struct {
	User     int64
	Upload   string
	Declared int64
	Received int64 // sum of the sizes of the chunks held
	Have     []int // indexes of the chunks held (their sizes sum to Received)
	// Lease is a hold's lease end (Ledger.Hold); zero for an upload session.
	Lease time.Time
}

// UserTotals is a user's quota and finished bytes as SQLite records them.
type UserTotals struct {
	User     int64
	Total    int64
	Finished int64
}

// Truth lists what SQLite says is open. The upload package implements it.
type Truth interface {
	OpenSessions(ctx context.Context) ([]Session, error)
}

// Flush is one task's write to SQLite: the session's received count as of
// Seq. Sequence numbers grow per upload; a sink ignores a flush whose Seq is
// not newer than the last it applied.
type Flush struct {
	User   int64
	Upload string
	Seq    int64
	Target int64 // absolute received bytes of the session
}

// FlushRecord is what the sink applied for an open upload.
type FlushRecord struct {
	Seq     int64
	Flushed int64
}

// Sink is the SQLite side of the ledger.
type Sink interface {
	// Flush applies each flush (skipping stale ones) in one transaction, with
	// at most one users-table write per flush.
	Flush(ctx context.Context, fs []Flush) error
	// Users returns every user's totals; User one of them.
	Users(ctx context.Context) ([]UserTotals, error)
	User(ctx context.Context, id int64) (UserTotals, error)
	// Repair settles flush records of uploads that are not open, makes
	// use_space_unfinished equal the sum of the open records, and returns the
	// records of the open uploads.
	Repair(ctx context.Context, open map[string]bool) (map[string]FlushRecord, error)
}

// Ledger is the quota ledger. Both implementations (NewMemory, NewRedis) pass
// the same conformance suite. Errors carry an errs kind: Quota (507) when a
// session does not fit, Unavailable (503) when the ledger cannot answer
// exactly (Redis unreachable, or its state lost: then also ErrStateLost),
// TooLarge when a chunk exceeds the declared size, Permission when the upload
// belongs to another user, Conflict when an upload id is reused with another
// size, NotFound when a chunk names an upload the ledger does not know.
type Ledger interface {
	// Reserve admits a new session (see the admission rule). Reserving the
	// same upload again with the same size is a no-op that succeeds.
	Reserve(ctx context.Context, user int64, upload string, declared int64) (Usage, error)
	// Hold is Reserve for bytes entering outside upload sessions (a WebDAV
	// PUT): no database row lists it, so it carries a lease until `until`,
	// which its node renews (Renew) while the bytes stream. Reconcile keeps
	// a hold it does not find in the truth while its lease runs (another
	// node's PUT in progress) and drops it once the lease has expired (its
	// node died). Holding an upload again renews it.
	Hold(ctx context.Context, user int64, upload string, declared int64, until time.Time) (Usage, error)
	// Renew moves a hold's lease end to until; false when the ledger does
	// not know the hold (ended, lost with the ledger's state, or dropped
	// after its lease expired).
	Renew(ctx context.Context, user int64, upload string, until time.Time) (bool, error)
	// ExpireHolds releases the holds whose lease ended at or before now
	// (their nodes died) and returns how many, so their space comes back
	// without waiting for a Reconcile. Production calls it from the flush
	// rounds (Guard.Flush).
	ExpireHolds(ctx context.Context, now time.Time) (int, error)
	// Chunk counts n bytes of chunk index received by the upload and pushes
	// its flush later. A chunk index already counted is not counted again.
	Chunk(ctx context.Context, user int64, upload string, index int, n int64) error
	// Commit ends a session by a merge of size bytes (<= declared): Finished
	// += size and the reservation is released in one atomic step.
	Commit(ctx context.Context, user int64, upload string, size int64) (Released, error)
	// Release ends a session without a file (abort, expiry).
	Release(ctx context.Context, user int64, upload string) (Released, error)
	// AddFinished moves Finished by delta for writes outside sessions and for
	// deletes; growth obeys the admission rule.
	AddFinished(ctx context.Context, user int64, delta int64) error
	// SetTotal changes a user's quota (admin). Lowering it below the current
	// committed usage refuses new sessions; it takes nothing away.
	SetTotal(ctx context.Context, user int64, total int64) error
	// Forget drops a deleted user.
	Forget(ctx context.Context, user int64) error
	// Usage returns a user's figures.
	Usage(ctx context.Context, user int64) (Usage, error)
	// ScanDue flushes the tasks due at now to the sink and returns how many
	// flushes it wrote. Production calls it from Run; tests call it directly.
	ScanDue(ctx context.Context, now time.Time) (int, error)
	// Reconcile rebuilds the ledger from SQLite: users from the sink, open
	// sessions from truth, plus the holds the ledger has whose lease has not
	// expired at the ledger clock's now (see Hold). Run it at startup and
	// after ErrStateLost.
	Reconcile(ctx context.Context, truth Truth) error
	// Ready returns nil when the ledger holds reconciled state, an
	// ErrStateLost error when Reconcile must run, Unavailable when it
	// cannot tell (Redis unreachable).
	Ready(ctx context.Context) error
}

// Clock gives the time; testutil.Clock is one.
type Clock interface{ Now() time.Time }

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Config is shared by both implementations.
type Config struct {
	Sink  Sink          // required
	Clock Clock         // default: the system clock
	Delay time.Duration // a task is due this long after its last chunk; default 5 s
	Lease time.Duration // a claimed task is re-claimable after this; default 30 s
	Batch int           // tasks per scan transaction; default 256
	Log   *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	if c.Delay <= 0 {
		c.Delay = 5 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = 30 * time.Second
	}
	if c.Batch <= 0 {
		c.Batch = 256
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	return c
}

// ErrStateLost means the ledger's state is gone (Redis flushed or restarted
// empty, or a fresh embedded ledger) and Reconcile must run before it answers.
// It comes wrapped with kind errs.Unavailable.
var ErrStateLost = errors.New("quota ledger state lost: reconciling from the database")

func lost(op string) error { return errs.E(op, errs.Unavailable, "", ErrStateLost) }

func overQuota(op string, u Usage, need int64) error {
	return errs.OverQuota(op, "", u.Free(), need, "")
}

// Run scans due tasks every interval until ctx ends, and reconciles from
// truth when the ledger reports its state lost (a Redis that restarted empty
// heals within one interval).
func Run(ctx context.Context, l Ledger, truth Truth, clock Clock, every time.Duration, log *slog.Logger) {
	if clock == nil {
		clock = systemClock{}
	}
	if log == nil {
		log = slog.Default()
	}
	tick.Every(ctx, every, func(ctx context.Context) {
		_, err := l.ScanDue(ctx, clock.Now())
		if errors.Is(err, ErrStateLost) {
			log.Warn("quota: ledger state lost, reconciling")
			err = l.Reconcile(ctx, truth)
		}
		if err != nil && ctx.Err() == nil {
			log.Log(ctx, redishealth.Level(err, slog.LevelWarn), "quota: scan", "err", err)
		}
	})
}

// claimed is a task taken by a scanner, to be flushed then acknowledged.
type claimed struct {
	Flush
}

// scanner is the part of an implementation ScanDue drives.
type scanner interface {
	claim(ctx context.Context, now time.Time, limit int) ([]claimed, error)
	ack(ctx context.Context, c claimed) error
}

// scanDue claims, flushes and acknowledges batches until nothing is due at now.
func scanDue(ctx context.Context, s scanner, sink Sink, now time.Time, batch int) (int, error) {
	total := 0
	for {
		cs, err := s.claim(ctx, now, batch)
		if err != nil || len(cs) == 0 {
			return total, err
		}
		fs := make([]Flush, len(cs))
		for i, c := range cs {
			fs[i] = c.Flush
		}
		// A failed flush leaves the claims leased: after the lease another
		// scan re-sends them with the same sequence numbers.
		if err := sink.Flush(ctx, fs); err != nil {
			return total, fmt.Errorf("quota: flush: %w", err)
		}
		for _, c := range cs {
			if err := s.ack(ctx, c); err != nil {
				return total, err
			}
		}
		// Loop until nothing is due: an acknowledged task that received
		// chunks while in flight is due again at once.
		total += len(cs)
	}
}

// reconcileSeq is the first sequence number of a session rebuilt by
// Reconcile: past the last applied one and past the one claim that may still
// be in flight from before, so that claim, if it lands late, is fenced out.
func reconcileSeq(rec FlushRecord) int64 { return rec.Seq + 2 }

// HoldOwner is implemented by a Truth that speaks for one node's holds (a
// Guard's): Reconcile takes the holds it owns from its list alone. One it
// owns and does not list has ended, or was left by the node's previous
// process (killed mid-PUT): no lease need be waited for.
type HoldOwner interface {
	OwnsHold(upload string) bool
}

// withLiveHolds adds to the truth's sessions the live holds the ledger had
// that the truth does not list and does not own: other nodes' PUTs in
// progress.
func withLiveHolds(sessions []Session, live []Session, truth Truth) []Session {
	if len(live) == 0 {
		return sessions
	}
	owner, _ := truth.(HoldOwner)
	listed := make(map[string]bool, len(sessions))
	for _, s := range sessions {
		listed[s.Upload] = true
	}
	for _, h := range live {
		if !listed[h.Upload] && (owner == nil || !owner.OwnsHold(h.Upload)) {
			sessions = append(sessions, h)
		}
	}
	return sessions
}
