package lock

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"netdisk/errs"
)

// shardCount spreads keys over independent mutexes: two keys contend only
// when they hash to the same shard, never on a global lock.
const shardCount = 256

// Memory is the in-process State of one daemon.
type Memory struct {
	seed   maphash.Seed
	shards [shardCount]shard

	// users counts queue slots per user across all shards (the per-user
	// bound). Only queueing and dequeueing touch it, never an uncontended
	// acquire or release.
	usersMu sync.Mutex
	users   map[string]int

	watchMu  sync.RWMutex
	watchers map[int]func(Event)
	nextW    int
}

type shard struct {
	mu     sync.Mutex
	locks  map[string]*holder
	queues map[string][]Node
}

type holder struct {
	node     Node
	deadline time.Time
	claimed  bool // false while a grant waits to be claimed
}

var _ State = (*Memory)(nil)

// NewMemory returns an empty in-process state.
func NewMemory() *Memory {
	m := &Memory{seed: maphash.MakeSeed(), users: map[string]int{}, watchers: map[int]func(Event){}}
	for i := range m.shards {
		m.shards[i].locks = map[string]*holder{}
		m.shards[i].queues = map[string][]Node{}
	}
	return m
}

func (m *Memory) shard(key string) *shard {
	return &m.shards[maphash.String(m.seed, key)%shardCount]
}

// emit delivers events after the shard's mutex is released.
func (m *Memory) emit(evs []Event) {
	if len(evs) == 0 {
		return
	}
	m.watchMu.RLock()
	defer m.watchMu.RUnlock()
	for _, e := range evs {
		for _, f := range m.watchers {
			f(e)
		}
	}
}

func (m *Memory) addUser(user string, delta, max int) bool {
	m.usersMu.Lock()
	defer m.usersMu.Unlock()
	n := m.users[user] + delta
	if delta > 0 && n > max {
		return false
	}
	if n <= 0 {
		delete(m.users, user)
	} else {
		m.users[user] = n
	}
	return true
}

// expireLocked passes the key on when its lease ended (a failure). Called
// with s.mu held.
func (m *Memory) expireLocked(s *shard, key string, lim Limits, now time.Time, evs []Event) []Event {
	h := s.locks[key]
	if h == nil || now.Before(h.deadline) {
		return evs
	}
	evs = append(evs, Event{Type: EventLost, Key: key, Node: h.node})
	return m.handoverLocked(s, key, lim, now, evs)
}

// handoverLocked is the seed's processQueue: the head of the key's queue
// gets the lock (to claim within a lease) and is woken; with an empty queue
// the lock is deleted.
func (m *Memory) handoverLocked(s *shard, key string, lim Limits, now time.Time, evs []Event) []Event {
	q := s.queues[key]
	if len(q) == 0 {
		delete(s.locks, key)
		delete(s.queues, key)
		return evs
	}
	next := q[0]
	q[0] = Node{}
	if len(q) == 1 {
		delete(s.queues, key)
	} else {
		s.queues[key] = q[1:]
	}
	m.addUser(next.User, -1, 0)
	s.locks[key] = &holder{node: next, deadline: now.Add(lim.Lease)}
	return append(evs, Event{Type: EventGranted, Key: key, Node: next})
}

func position(q []Node, n Node) int {
	for i, w := range q {
		if w == n {
			return i + 1
		}
	}
	return 0
}

func (m *Memory) standingLocked(s *shard, key string, n Node) Result {
	if h := s.locks[key]; h != nil && h.node == n {
		if h.claimed {
			return Result{Status: Acquired, Deadline: h.deadline}
		}
		return Result{Status: Granted, Deadline: h.deadline}
	}
	if p := position(s.queues[key], n); p > 0 {
		return Result{Status: Queued, Position: p}
	}
	return Result{Status: None}
}

// TryLock implements State.
func (m *Memory) TryLock(ctx context.Context, key string, n Node, lim Limits, now time.Time) (Result, error) {
	s := m.shard(key)
	s.mu.Lock()
	evs := m.expireLocked(s, key, lim, now, nil)
	res, err := m.tryLockLocked(s, key, n, lim, now)
	s.mu.Unlock()
	m.emit(evs)
	return res, err
}

func (m *Memory) tryLockLocked(s *shard, key string, n Node, lim Limits, now time.Time) (Result, error) {
	h := s.locks[key]
	switch {
	case h == nil:
		s.locks[key] = &holder{node: n, deadline: now.Add(lim.Lease), claimed: true}
		return Result{Status: Acquired, Deadline: now.Add(lim.Lease)}, nil
	case h.node == n:
		re := h.claimed
		h.claimed, h.deadline = true, now.Add(lim.Lease)
		return Result{Status: Acquired, Reentered: re, Deadline: h.deadline}, nil
	case !lim.MultiNode:
		return Result{Status: Refused}, nil
	}
	q := s.queues[key]
	if p := position(q, n); p > 0 {
		return Result{Status: Queued, Position: p}, nil
	}
	if len(q) >= lim.MaxQueue {
		return Result{}, errs.Errorf("lock.TryLock", errs.TooMany, "too many waiters for this lock (%d)", lim.MaxQueue)
	}
	if !m.addUser(n.User, 1, lim.MaxUserWait) {
		return Result{}, errs.Errorf("lock.TryLock", errs.TooMany, "too many locks waited for by this user (%d)", lim.MaxUserWait)
	}
	s.queues[key] = append(q, n)
	return Result{Status: Queued, Position: len(q) + 1}, nil
}

// Heartbeat implements State.
func (m *Memory) Heartbeat(ctx context.Context, key string, n Node, lim Limits, now time.Time) (Result, error) {
	s := m.shard(key)
	s.mu.Lock()
	evs := m.expireLocked(s, key, lim, now, nil)
	var res Result
	var err error
	if h := s.locks[key]; h != nil && h.node == n {
		h.claimed, h.deadline = true, now.Add(lim.Lease)
		res = Result{Status: Acquired, Deadline: h.deadline}
	} else {
		err = errs.Errorf("lock.Heartbeat", errs.Conflict, "lock not held by this node")
	}
	s.mu.Unlock()
	m.emit(evs)
	return res, err
}

// Unlock implements State.
func (m *Memory) Unlock(ctx context.Context, key string, n Node, failed bool, lim Limits, now time.Time) error {
	s := m.shard(key)
	s.mu.Lock()
	evs := m.expireLocked(s, key, lim, now, nil)
	var err error
	switch h := s.locks[key]; {
	case h != nil && h.node == n && failed:
		evs = m.handoverLocked(s, key, lim, now, evs)
	case h != nil && h.node == n:
		// Success: the resource exists now. Nobody inherits the lock;
		// every waiter re-checks.
		for _, w := range s.queues[key] {
			m.addUser(w.User, -1, 0)
			evs = append(evs, Event{Type: EventReleased, Key: key, Node: w})
		}
		delete(s.locks, key)
		delete(s.queues, key)
	default:
		q := s.queues[key]
		if p := position(q, n); p > 0 {
			q = append(q[:p-1:p-1], q[p:]...)
			if len(q) == 0 {
				delete(s.queues, key)
			} else {
				s.queues[key] = q
			}
			m.addUser(n.User, -1, 0)
		} else {
			err = errs.Errorf("lock.Unlock", errs.Conflict, "lock not held by this node")
		}
	}
	s.mu.Unlock()
	m.emit(evs)
	return err
}

// Inspect implements State.
func (m *Memory) Inspect(ctx context.Context, key string, n Node, lim Limits, now time.Time) (Result, error) {
	s := m.shard(key)
	s.mu.Lock()
	evs := m.expireLocked(s, key, lim, now, nil)
	res := m.standingLocked(s, key, n)
	s.mu.Unlock()
	m.emit(evs)
	return res, nil
}

// Expire implements State: one shard at a time, so a sweep never stops the
// whole manager.
func (m *Memory) Expire(ctx context.Context, lim Limits, now time.Time) error {
	for i := range m.shards {
		if err := ctx.Err(); err != nil {
			return err
		}
		s := &m.shards[i]
		s.mu.Lock()
		var evs []Event
		for key, h := range s.locks {
			if !now.Before(h.deadline) {
				evs = m.expireLocked(s, key, lim, now, evs)
			}
		}
		s.mu.Unlock()
		m.emit(evs)
	}
	return nil
}

// Watch implements State.
func (m *Memory) Watch(ctx context.Context, deliver func(Event)) (func(), error) {
	m.watchMu.Lock()
	id := m.nextW
	m.nextW++
	m.watchers[id] = deliver
	m.watchMu.Unlock()
	return func() {
		m.watchMu.Lock()
		delete(m.watchers, id)
		m.watchMu.Unlock()
	}, nil
}

// Waiting counts the queued nodes: the queue slots the users hold.
func (m *Memory) Waiting(context.Context) (int, error) {
	m.usersMu.Lock()
	defer m.usersMu.Unlock()
	n := 0
	for _, c := range m.users {
		n += c
	}
	return n, nil
}
