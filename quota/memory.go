package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"netdisk/errs"
)

// Memory is the embedded ledger: the Redis ledger's semantics in process, for
// a single daemon without --redis. Its state dies with the process, so a new
// Memory answers ErrStateLost until Reconcile has run (at startup).
type Memory struct {
	cfg Config

	mu         sync.Mutex
	reconciled bool
	users      map[int64]*Usage
	sessions   map[string]*memSession
	due        dueSet // the sessions with a flush to do, by score
	// visited counts the tasks claim has looked at, so a test can check
	// that a scan touches due tasks only.
	visited int
}

// memSession mirrors the Redis session hash.
type memSession struct {
	id         string
	user       int64
	declared   int64
	received   int64
	flushed    int64 // received count SQLite has (acknowledged)
	have       map[int]bool
	due        time.Time // last chunk + Delay
	slot       int       // index in Memory.due; -1 when not in it
	score      time.Time // position in the due set (due, or lease end while claimed)
	inflight   bool
	inflTarget int64
	seq        int64
	lease      time.Time
	hold       time.Time // a hold's lease end; zero for an upload session
}

var _ Ledger = (*Memory)(nil)

// NewMemory returns an embedded ledger; call Reconcile before use.
func NewMemory(cfg Config) *Memory {
	return &Memory{cfg: cfg.withDefaults(), users: map[int64]*Usage{}, sessions: map[string]*memSession{}}
}

// user returns the user's figures, loading them from the sink on first use
// (a user created after Reconcile). Called with mu held; it drops mu around
// the sink call.
func (m *Memory) user(ctx context.Context, op string, id int64) (*Usage, error) {
	if !m.reconciled {
		return nil, lost(op)
	}
	if u := m.users[id]; u != nil {
		return u, nil
	}
	m.mu.Unlock()
	t, err := m.cfg.Sink.User(ctx, id)
	m.mu.Lock()
	if err != nil {
		return nil, err
	}
	if !m.reconciled {
		return nil, lost(op)
	}
	if u := m.users[id]; u != nil {
		return u, nil
	}
	u := &Usage{Total: t.Total, Finished: t.Finished}
	m.users[id] = u
	return u, nil
}

func (m *Memory) Reserve(ctx context.Context, user int64, upload string, declared int64) (Usage, error) {
	return m.reserve(ctx, "quota.Reserve", user, upload, declared, time.Time{})
}

func (m *Memory) Hold(ctx context.Context, user int64, upload string, declared int64, until time.Time) (Usage, error) {
	if until.IsZero() {
		return Usage{}, errs.Errorf("quota.Hold", errs.Invalid, "hold %q without a lease", upload)
	}
	return m.reserve(ctx, "quota.Hold", user, upload, declared, until)
}

func (m *Memory) Renew(ctx context.Context, user int64, upload string, until time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reconciled {
		return false, lost("quota.Renew")
	}
	s := m.sessions[upload]
	if s == nil || s.hold.IsZero() {
		return false, nil
	}
	if s.user != user {
		return false, errs.Errorf("quota.Renew", errs.Permission, "upload %s belongs to another user", upload)
	}
	s.hold = until
	return true, nil
}

func (m *Memory) ExpireHolds(ctx context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reconciled {
		return 0, lost("quota.ExpireHolds")
	}
	n := 0
	for id, s := range m.sessions {
		if s.hold.IsZero() || s.hold.After(now) {
			continue
		}
		if u := m.users[s.user]; u != nil {
			u.Uploading -= s.declared
			u.Unfinished -= s.received
		}
		m.due.unschedule(s)
		delete(m.sessions, id)
		n++
	}
	return n, nil
}

func (m *Memory) reserve(ctx context.Context, op string, user int64, upload string, declared int64, hold time.Time) (Usage, error) {
	if err := checkReservation(op, upload, declared); err != nil {
		return Usage{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.user(ctx, op, user)
	if err != nil {
		return Usage{}, err
	}
	if s := m.sessions[upload]; s != nil {
		if s.user != user || s.declared != declared {
			return *u, errs.Errorf(op, errs.Conflict, "upload %s already reserved with another size", upload)
		}
		if !s.hold.IsZero() && !hold.IsZero() {
			s.hold = hold
		}
		return *u, nil
	}
	if !admits(*u, declared) {
		return *u, overQuota(op, *u, declared)
	}
	u.Uploading += declared
	m.sessions[upload] = &memSession{id: upload, user: user, declared: declared, have: map[int]bool{}, slot: -1, hold: hold}
	return *u, nil
}

func (m *Memory) Chunk(ctx context.Context, user int64, upload string, index int, n int64) error {
	const op = "quota.Chunk"
	if err := checkChunk(op, index, n); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reconciled {
		return lost(op)
	}
	s := m.sessions[upload]
	if s == nil {
		return errs.Errorf(op, errs.NotFound, "upload %s has no reservation", upload)
	}
	if s.user != user {
		return errs.Errorf(op, errs.Permission, "upload %s belongs to another user", upload)
	}
	if s.have[index] {
		return nil
	}
	if n > s.declared-s.received { // (received <= declared: no overflow)
		return errs.Errorf(op, errs.TooLarge, "chunk exceeds the declared size (%d of %d bytes received)", s.received, s.declared)
	}
	u := m.users[user]
	if u == nil {
		return lost(op) // cannot happen: a session's user is loaded
	}
	s.have[index] = true
	s.received += n
	u.Unfinished += n
	s.due = m.cfg.Clock.Now().Add(m.cfg.Delay)
	m.due.schedule(s, s.due)
	return nil
}

// end removes a session; size >= 0 is a merge of size bytes.
func (m *Memory) end(ctx context.Context, op string, user int64, upload string, size int64) (Released, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reconciled {
		return Released{}, lost(op)
	}
	s := m.sessions[upload]
	if s == nil {
		return Released{}, nil
	}
	if s.user != user {
		return Released{}, errs.Errorf(op, errs.Permission, "upload %s belongs to another user", upload)
	}
	if size > s.declared {
		return Released{}, errs.Errorf(op, errs.TooLarge, "merged size %d exceeds the declared %d", size, s.declared)
	}
	r := Released{Found: true, Declared: s.declared, Received: s.received, Flushed: s.flushed}
	if s.inflight {
		r.InFlight = s.inflTarget - s.flushed
		r.Pending = s.received - s.inflTarget
	} else {
		r.Pending = s.received - s.flushed
	}
	if u := m.users[user]; u != nil {
		u.Uploading -= s.declared
		u.Unfinished -= s.received
		if size >= 0 {
			u.Finished += size
		}
	}
	m.due.unschedule(s)
	delete(m.sessions, upload)
	return r, nil
}

func (m *Memory) Commit(ctx context.Context, user int64, upload string, size int64) (Released, error) {
	return commit(ctx, m, user, upload, size)
}

func (m *Memory) Release(ctx context.Context, user int64, upload string) (Released, error) {
	return release(ctx, m, user, upload)
}

func (m *Memory) AddFinished(ctx context.Context, user int64, delta int64) error {
	const op = "quota.AddFinished"
	if err := checkSize(op, "a change", delta); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.user(ctx, op, user)
	if err != nil {
		return err
	}
	if delta > 0 && !admits(*u, delta) {
		return overQuota(op, *u, delta)
	}
	u.Finished += delta
	return nil
}

func (m *Memory) SetTotal(ctx context.Context, user int64, total int64) error {
	const op = "quota.SetTotal"
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.user(ctx, op, user)
	if err != nil {
		return err
	}
	u.Total = total
	return nil
}

func (m *Memory) Forget(ctx context.Context, user int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reconciled {
		return lost("quota.Forget")
	}
	delete(m.users, user)
	for id, s := range m.sessions {
		if s.user == user {
			m.due.unschedule(s)
			delete(m.sessions, id)
		}
	}
	return nil
}

func (m *Memory) Usage(ctx context.Context, user int64) (Usage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, err := m.user(ctx, "quota.Usage", user)
	if err != nil {
		return Usage{}, err
	}
	return *u, nil
}

func (m *Memory) ScanDue(ctx context.Context, now time.Time) (int, error) {
	return scanDue(ctx, m, m.cfg.Sink, now, m.cfg.Batch)
}

// claim is the in-process twin of the Redis claim script.
func (m *Memory) claim(ctx context.Context, now time.Time, limit int) ([]claimed, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reconciled {
		return nil, lost("quota.ScanDue")
	}
	var out []claimed
	// Like the Redis script's ZRANGEBYSCORE: only the front of the set, while
	// it is due. Each turn takes the front task out or moves it past now.
	for len(out) < limit {
		s := m.due.first()
		if s == nil || s.score.After(now) {
			break
		}
		m.visited++
		switch {
		case s.inflight && s.lease.After(now):
			m.due.schedule(s, s.lease) // another scan holds it
			continue
		case s.inflight:
			// The holder's lease ran out: send the same flush again.
		case s.received == s.flushed:
			m.due.unschedule(s)
			continue
		default:
			s.seq++
			s.inflight, s.inflTarget = true, s.received
		}
		s.lease = now.Add(m.cfg.Lease)
		m.due.schedule(s, s.lease)
		out = append(out, claimed{Flush{User: s.user, Upload: s.id, Seq: s.seq, Target: s.inflTarget}})
	}
	return out, nil
}

func (m *Memory) ack(ctx context.Context, c claimed) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[c.Upload]
	if s == nil || !s.inflight || s.seq != c.Seq {
		return nil // released meanwhile, or acknowledged by a re-claimer
	}
	s.flushed, s.inflight = s.inflTarget, false
	if s.received == s.flushed {
		m.due.unschedule(s)
	} else {
		m.due.schedule(s, s.due)
	}
	return nil
}

// Reconcile rebuilds the whole ledger from SQLite, keeping the live holds.
func (m *Memory) Reconcile(ctx context.Context, truth Truth) error {
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	m.reconciled = false // every call answers ErrStateLost until done
	var live []Session
	for _, s := range m.sessions {
		if s.hold.After(now) {
			live = append(live, Session{User: s.user, Upload: s.id, Declared: s.declared, Lease: s.hold})
		}
	}
	m.mu.Unlock()
	us, sessions, recs, err := readTruth(ctx, m.cfg.Sink, truth, live)
	if err != nil {
		return err
	}
	ss := make(map[string]*memSession, len(sessions))
	var due dueSet
	for _, x := range sessions {
		u := us[x.User]
		if u == nil {
			continue // the user is gone
		}
		rec := recs[x.Upload]
		s := &memSession{id: x.Upload, user: x.User, declared: x.Declared, received: x.Received, flushed: rec.Flushed,
			have: make(map[int]bool, len(x.Have)), seq: reconcileSeq(rec), due: now, slot: -1, hold: x.Lease}
		for _, i := range x.Have {
			s.have[i] = true
		}
		if s.received != s.flushed {
			due.schedule(s, now)
		}
		u.Uploading += x.Declared
		u.Unfinished += x.Received
		ss[x.Upload] = s
	}
	m.mu.Lock()
	m.users, m.sessions, m.due, m.reconciled = us, ss, due, true
	m.mu.Unlock()
	return nil
}

// readTruth reads the open sessions, adds the live holds to them and
// repairs the flush records; it returns each user's usage before any
// session is counted in (the total and what is finished).
func readTruth(ctx context.Context, sink Sink, truth Truth, live []Session) (map[int64]*Usage, []Session, map[string]FlushRecord, error) {
	if truth == nil {
		return nil, nil, nil, errors.New("quota: reconcile without a truth")
	}
	sessions, err := truth.OpenSessions(ctx)
	if err != nil {
		return nil, nil, nil, errs.E("quota.Reconcile", errs.Unavailable, "", fmt.Errorf("open sessions: %w", err))
	}
	open := make(map[string]bool, len(sessions))
	for _, s := range sessions {
		open[s.Upload] = true
	}
	recs, err := sink.Repair(ctx, open)
	if err != nil {
		return nil, nil, nil, err
	}
	users, err := sink.Users(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	us := make(map[int64]*Usage, len(users))
	for _, t := range users {
		us[t.User] = &Usage{Total: t.Total, Finished: t.Finished}
	}
	return us, withLiveHolds(sessions, live, truth), recs, nil
}

func (m *Memory) Ready(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.reconciled {
		return lost("quota.Ready")
	}
	return nil
}
