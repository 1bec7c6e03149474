package lock

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"netdisk/internal/redishealth"
	"netdisk/internal/tick"
	"netdisk/internal/zero"
)

// Defaults of Config.
const (
	DefaultLease       = 15 * time.Second
	DefaultMaxQueue    = 1024 // waiters per key
	DefaultMaxUserWait = 4096 // queue slots of one user across keys
	// subscriptionBuffer is how many events a slow subscriber may lag
	// before it is cut off (and, reconnecting, learns its state afresh).
	subscriptionBuffer = 64
)

// Config wires a Manager.
type Config struct {
	State State // nil means NewMemory()
	// Lease is how long a holder holds without a heartbeat, and how long a
	// granted queue head has to claim; 0 means DefaultLease.
	Lease time.Duration
	// SingleNode refuses a key held by another node instead of queueing
	// the caller (--multi-node-pull=false).
	SingleNode  bool
	MaxQueue    int // 0 means DefaultMaxQueue
	MaxUserWait int // 0 means DefaultMaxUserWait
	Now         func() time.Time
	Log         *slog.Logger
}

// Manager applies the rules of the package doc over a State, with a clock,
// and fans the state's events out to subscribed nodes.
type Manager struct {
	st   State
	lim  Limits
	now  func() time.Time
	log  *slog.Logger
	stop func()
	once sync.Once

	subMu sync.RWMutex
	subs  map[Node]map[*Subscription]struct{}

	pullEdge redishealth.Edge // Pull is fetching uncoordinated (logged by its edges)
}

// NewManager returns a manager watching c.State's events; Close stops it.
func NewManager(ctx context.Context, c Config) (*Manager, error) {
	if c.State == nil {
		c.State = NewMemory()
	}
	zero.OrDefault(&c.Lease, DefaultLease)
	zero.OrDefault(&c.MaxQueue, DefaultMaxQueue)
	zero.OrDefault(&c.MaxUserWait, DefaultMaxUserWait)
	c.Now, c.Log = zero.Clock(c.Now), zero.Logger(c.Log)
	m := &Manager{st: c.State, now: c.Now, log: c.Log, subs: map[Node]map[*Subscription]struct{}{},
		lim: Limits{Lease: c.Lease, MultiNode: !c.SingleNode, MaxQueue: c.MaxQueue, MaxUserWait: c.MaxUserWait}}
	stop, err := c.State.Watch(ctx, m.deliver)
	if err != nil {
		return nil, err
	}
	m.stop = stop
	return m, nil
}

// Close stops watching the state and ends every subscription.
func (m *Manager) Close() {
	m.once.Do(m.stop)
	m.subMu.Lock()
	defer m.subMu.Unlock()
	for _, set := range m.subs {
		for s := range set {
			s.closeLocked()
		}
	}
	m.subs = map[Node]map[*Subscription]struct{}{}
}

// Lease is the lease a holder must renew within.
func (m *Manager) Lease() time.Duration { return m.lim.Lease }

// MultiNode reports whether busy keys queue (true) or refuse.
func (m *Manager) MultiNode() bool { return m.lim.MultiNode }

// TryLock asks for the lock of op on resource (see the package doc).
func (m *Manager) TryLock(ctx context.Context, op, resource string, n Node) (Result, error) {
	return m.st.TryLock(ctx, Key(op, resource), n, m.lim, m.now())
}

// Heartbeat renews the holder's lease; errs.Conflict when n does not hold it
// (any more: its lease ran out and the lock passed on).
func (m *Manager) Heartbeat(ctx context.Context, op, resource string, n Node) (Result, error) {
	return m.st.Heartbeat(ctx, Key(op, resource), n, m.lim, m.now())
}

// Unlock ends n's work on the key: failure != nil hands the lock to the
// queue head, nil (success) deletes it and wakes every waiter to re-check.
// A waiter unlocking leaves the queue.
func (m *Manager) Unlock(ctx context.Context, op, resource string, n Node, failure error) error {
	return m.st.Unlock(ctx, Key(op, resource), n, failure != nil, m.lim, m.now())
}

// Inspect tells n's standing on the key.
func (m *Manager) Inspect(ctx context.Context, op, resource string, n Node) (Result, error) {
	return m.st.Inspect(ctx, Key(op, resource), n, m.lim, m.now())
}

// Expire passes on every lock whose lease has ended now.
func (m *Manager) Expire(ctx context.Context) error { return m.st.Expire(ctx, m.lim, m.now()) }

// Run expires leases every interval (a quarter of the lease when 0) until ctx
// ends, so a queue behind a crashed holder moves on even if nobody asks.
func (m *Manager) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = max(m.lim.Lease/4, 10*time.Millisecond)
	}
	var edge redishealth.Edge // failures logged by their edges, not once a tick
	tick.Every(ctx, interval, func(ctx context.Context) {
		switch err := m.Expire(ctx); {
		case err == nil:
			edge.OK(ctx, m.log, "lock: leases expire again")
		case ctx.Err() == nil:
			edge.Failed(ctx, m.log, slog.LevelWarn, "lock: cannot expire leases", err)
		}
	})
}

// Subscription receives the events of one node until closed. C is closed
// when the subscription ends: by Close, by the manager closing, or because
// the subscriber fell more than a buffer behind (then it re-subscribes and
// asks for its standing: nothing is lost that Inspect does not tell).
type Subscription struct {
	C      <-chan Event
	c      chan Event
	m      *Manager
	node   Node
	once   sync.Once
	closed bool
}

// Subscribe starts delivering n's events. Subscribe before asking for the
// standing (Inspect, TryLock): an event between the two is then not missed.
func (m *Manager) Subscribe(n Node) *Subscription {
	c := make(chan Event, subscriptionBuffer)
	s := &Subscription{C: c, c: c, m: m, node: n}
	m.subMu.Lock()
	set := m.subs[n]
	if set == nil {
		set = map[*Subscription]struct{}{}
		m.subs[n] = set
	}
	set[s] = struct{}{}
	m.subMu.Unlock()
	return s
}

// Close ends the subscription.
func (s *Subscription) Close() {
	s.m.subMu.Lock()
	defer s.m.subMu.Unlock()
	s.closeLocked()
	if set := s.m.subs[s.node]; set != nil {
		delete(set, s)
		if len(set) == 0 {
			delete(s.m.subs, s.node)
		}
	}
}

func (s *Subscription) closeLocked() {
	s.once.Do(func() { s.closed = true; close(s.c) })
}

// deliver fans an event out to its node's subscriptions, never blocking: a
// subscriber whose buffer is full is cut off.
func (m *Manager) deliver(e Event) {
	m.subMu.RLock()
	var slow []*Subscription
	for s := range m.subs[e.Node] {
		select {
		case s.c <- e:
		default:
			slow = append(slow, s)
		}
	}
	m.subMu.RUnlock()
	for _, s := range slow {
		m.log.Warn("lock: subscriber too slow, cut off", "node", e.Node.String())
		s.Close()
	}
}

// waitCounter is a State that can count its waiters: every State of this
// package is.
type waitCounter interface {
	Waiting(ctx context.Context) (int, error)
}

// Waiting returns how many nodes wait in the lock queues, all keys
// together (for the metrics; 0 with a State that cannot count).
func (m *Manager) Waiting(ctx context.Context) (int, error) {
	if wc, ok := m.st.(waitCounter); ok {
		return wc.Waiting(ctx)
	}
	return 0, nil
}
