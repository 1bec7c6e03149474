package davlock

import (
	"crypto/rand"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"netdisk/errs"
	"netdisk/vpath"
)

// Lock timeouts: clients ask for anything from seconds to Infinite; we grant
// at most MaxLockTimeout so a vanished client cannot pin a file forever, and
// DefaultLockTimeout when they do not say.
const (
	DefaultLockTimeout = 10 * time.Minute
	MaxLockTimeout     = time.Hour
	MaxLocksPerUser    = 1000
)

// Lock is one WebDAV write lock as PROPFIND's lockdiscovery and the
// LOCK response show it.
type Lock struct {
	Token    string        // opaquelocktoken:<uuid>
	Root     string        // cleaned path the lock was taken on
	Infinite bool          // Depth: infinity (else 0)
	Shared   bool          // shared, else exclusive
	Owner    string        // the owner element's content, as XML
	Timeout  time.Duration // granted timeout
	Expires  time.Time
	// Creator is the user who took the lock: the table's user (0), or a
	// recipient of a share who locked the owner's resource through it.
	// Only the creator is shown the token (RFC 4918 §6.4: it is theirs).
	Creator int64 `json:",omitempty"`
}

// covers reports whether name is within the lock's scope.
func (l *Lock) covers(name string) bool {
	return name == l.Root || (l.Infinite && vpath.IsBelow(name, l.Root))
}

// Manager is the in-process Table: it holds every user's WebDAV locks in memory: paths are per user,
// so tables are too, and a token never matches another user's resource.
// Locks are advisory state for clients, lost on restart as clients expect of
// timeouts anyway.
type Manager struct {
	now     func() time.Time
	max     int
	mu      sync.Mutex
	byUser  map[int64]map[string]*Lock // token → lock
	newUUID func() string
}

// NewManager returns an empty manager reading time from now (nil: time.Now).
func NewManager(now func() time.Time) *Manager {
	if now == nil {
		now = time.Now
	}
	return &Manager{now: now, max: MaxLocksPerUser, byUser: map[int64]map[string]*Lock{}, newUUID: uuid4}
}

var _ Table = (*Manager)(nil)

// Now is the manager's clock (lockdiscovery shows time left).
func (m *Manager) Now() time.Time { return m.now() }

// SetMax changes the per-user bound on live locks (tests use a small one).
func (m *Manager) SetMax(n int) {
	m.mu.Lock()
	m.max = n
	m.mu.Unlock()
}

// uuid4 returns a random (version 4) UUID: lock tokens must be unguessable
// and unique across time (RFC 4918 Appendix C).
func uuid4() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics instead)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ClampTimeout turns a requested timeout into the one granted: <= 0 means
// "unspecified" and gets the default.
func ClampTimeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultLockTimeout
	}
	return min(d, MaxLockTimeout)
}

// ParseTimeout reads a Timeout header ("Second-600, Infinite"): the first
// value we understand wins, clamped. A missing or unreadable header gets the
// default; clients list alternatives precisely so that servers can pick.
func ParseTimeout(h string) time.Duration {
	for _, v := range strings.Split(h, ",") {
		v = strings.TrimSpace(v)
		if strings.EqualFold(v, "Infinite") {
			return MaxLockTimeout
		}
		if len(v) > 7 && strings.EqualFold(v[:7], "Second-") {
			n, err := strconv.ParseUint(v[7:], 10, 32)
			if err == nil && n > 0 {
				return ClampTimeout(time.Duration(n) * time.Second)
			}
			if err != nil && len(v[7:]) > 0 && strings.Trim(v[7:], "0123456789") == "" {
				return MaxLockTimeout // a number too large for us: as long as we allow
			}
		}
	}
	return DefaultLockTimeout
}

// table returns uid's live locks after dropping expired ones, nil when the
// user has none (PROPFIND asks once per entry: that case must be cheap);
// mu held.
func (m *Manager) table(uid int64) map[string]*Lock {
	t := m.byUser[uid]
	if t == nil {
		return nil
	}
	now := m.now()
	for tok, l := range t {
		if !now.Before(l.Expires) {
			delete(t, tok)
		}
	}
	return t
}

// gc forgets a user's empty table; mu held.
func (m *Manager) gc(uid int64) {
	if len(m.byUser[uid]) == 0 {
		delete(m.byUser, uid)
	}
}

// Create takes a new lock described by l (Root, Infinite, Shared, Owner,
// Timeout) and returns it with its token and expiry. It fails with kind
// Locked when an existing lock conflicts (an exclusive lock conflicts with
// any other, shared ones only with exclusive ones, over overlapping scopes)
// and Unavailable past the per-user bound.
func (m *Manager) Create(uid int64, l Lock) (Lock, error) {
	const op = "davlock.Lock"
	root, err := vpath.Clean(l.Root)
	if err != nil {
		return Lock{}, errs.E(op, errs.Invalid, l.Root, err)
	}
	l.Root = root
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table(uid)
	defer m.gc(uid)
	for _, o := range t {
		overlap := o.covers(l.Root) || l.covers(o.Root)
		if overlap && (!o.Shared || !l.Shared) {
			return Lock{}, errs.E(op, errs.Locked, l.Root, &Held{Root: o.Root, Conflict: true})
		}
	}
	if len(t) >= m.max {
		return Lock{}, errs.E(op, errs.Unavailable, l.Root, fmt.Errorf("too many locks (at most %d per user); unlock some or wait for them to expire", m.max))
	}
	if t == nil {
		t = map[string]*Lock{}
		m.byUser[uid] = t
	}
	l.Token = "opaquelocktoken:" + m.newUUID()
	l.Timeout = ClampTimeout(l.Timeout)
	l.Expires = m.now().Add(l.Timeout)
	nl := l
	t[l.Token] = &nl
	return l, nil
}

// Refresh restarts the timeout of the lock named by token, which must
// include name in its scope (RFC 4918 §9.10.2). Kind Precondition otherwise.
func (m *Manager) Refresh(uid int64, token, name string, timeout time.Duration) (Lock, error) {
	var out Lock
	if !m.onLock(uid, token, name, func(_ map[string]*Lock, l *Lock) {
		l.Timeout = ClampTimeout(timeout)
		l.Expires = m.now().Add(l.Timeout)
		out = *l
	}) {
		return Lock{}, errs.E("davlock.Refresh", errs.Precondition, name, fmt.Errorf("no lock %s on this resource", token))
	}
	return out, nil
}

// Unlock removes the lock named by token; name must be within its scope.
// Kind Conflict otherwise (RFC 4918 §9.11.1: 409).
func (m *Manager) Unlock(uid int64, token, name string) error {
	if !m.onLock(uid, token, name, func(t map[string]*Lock, _ *Lock) { delete(t, token) }) {
		return errs.E("davlock.Unlock", errs.Conflict, name, fmt.Errorf("no lock %s on this resource", token))
	}
	return nil
}

// onLock runs fn, under the manager's mutex, on uid's live lock named by
// token if its scope includes name, with uid's table; it reports whether
// there was such a lock.
func (m *Manager) onLock(uid int64, token, name string, fn func(t map[string]*Lock, l *Lock)) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table(uid)
	defer m.gc(uid)
	l, ok := t[token]
	if !ok || !l.covers(name) {
		return false
	}
	fn(t, l)
	return true
}

// Holds reports whether token is a live lock of uid whose scope includes name.
func (m *Manager) Holds(uid int64, token, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table(uid)
	defer m.gc(uid)
	l, ok := t[token]
	return ok && l.covers(name)
}

// Covering returns the live locks whose scope includes name (its own and
// depth-infinity ones of ancestors), oldest root first: what lockdiscovery
// shows.
func (m *Manager) Covering(uid int64, name string) []Lock {
	return m.collect(uid, func(l *Lock) bool { return l.covers(name) })
}

// Below returns the live locks rooted strictly below name.
func (m *Manager) Below(uid int64, name string) []Lock {
	return m.collect(uid, func(l *Lock) bool { return vpath.IsBelow(l.Root, name) })
}

func (m *Manager) collect(uid int64, keep func(*Lock) bool) []Lock {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table(uid)
	defer m.gc(uid)
	var out []Lock
	for _, l := range t {
		if keep(l) {
			out = append(out, *l)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Root != out[j].Root {
			return len(out[i].Root) < len(out[j].Root)
		}
		return out[i].Token < out[j].Token
	})
	return out
}

// Release destroys the locks rooted at name or below it: the resources they
// were taken on are gone (DELETE, the source of a MOVE). RFC 4918 §9.6.1,
// §7.7; x/net/webdav keeps them (golang/go#42839).
func (m *Manager) Release(uid int64, name string) int {
	return m.drop(uid, func(l *Lock) bool { return l.Root == name || vpath.IsBelow(l.Root, name) })
}

// ReleaseBelow destroys the locks rooted strictly below name: an overwritten
// destination's old members are gone, while a lock on the destination itself
// takes the new resource into its scope (RFC 4918 §7.7).
func (m *Manager) ReleaseBelow(uid int64, name string) int {
	return m.drop(uid, func(l *Lock) bool { return vpath.IsBelow(l.Root, name) })
}

func (m *Manager) drop(uid int64, match func(*Lock) bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.table(uid)
	defer m.gc(uid)
	n := 0
	for tok, l := range t {
		if match(l) {
			delete(t, tok)
			n++
		}
	}
	return n
}

// Count returns uid's number of live locks.
func (m *Manager) Count(uid int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.table(uid))
	m.gc(uid)
	return n
}
