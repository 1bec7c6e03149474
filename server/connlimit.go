package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Every connection holds a file descriptor. Without a bound, anyone who can
// reach the port can open connections (a request each, then keep-alive)
// until the process reaches its descriptor limit: then it can open neither
// sockets nor chunk files nor its database, and /healthz stops answering.
// So the daemon bounds what it holds:
//   - in all (ConnLimits.Max) and per client address (PerAddr). A new
//     connection over a bound closes the oldest idle one in its way (a
//     keep-alive connection between requests, or one that has sent nothing
//     yet), preferring those that never authenticated; when every one is
//     busy with a request, the new connection is closed at once. So idle
//     connections, however many are opened, never keep anyone out;
//   - a connection that has not authenticated gets PreAuthTimeout (instead
//     of the server's header and idle timeouts) to send its next request's
//     headers: an anonymous client cannot park a descriptor for minutes;
//   - the soft descriptor limit is raised to the hard one at start
//     (RaiseFDLimit), and the default Max derives from it.

// ConnLimits bound the connections of the public listener; zero fields take
// the defaults (DefaultConnLimits).
type ConnLimits struct {
	Max            int           // open connections in all
	PerAddr        int           // open connections per client IP address
	PreAuthTimeout time.Duration // header and idle timeout before a request authenticated
}

// Default bounds. DefaultPerAddr leaves a reverse proxy (every client shares
// its address) room for 1024 requests in flight.
const (
	DefaultMaxConns       = 16384
	DefaultPerAddr        = 1024
	DefaultPreAuthTimeout = 10 * time.Second
)

// fdReserve is what Max leaves of the descriptor limit for everything else
// (the database, chunk files being read and written, Redis connections).
const fdReserve = 256

// DefaultConnLimits fills c's zero fields: Max from the descriptor limit
// (half of it, leaving at least fdReserve, at most DefaultMaxConns).
func DefaultConnLimits(c ConnLimits, fdLimit uint64) ConnLimits {
	if c.Max == 0 {
		c.Max = DefaultMaxConns
		if fdLimit > 0 {
			c.Max = int(min(uint64(DefaultMaxConns), max(fdLimit/2, 64), max(fdLimit, 2*fdReserve)-fdReserve))
		}
	}
	if c.PerAddr == 0 {
		c.PerAddr = min(DefaultPerAddr, c.Max)
	}
	if c.PreAuthTimeout == 0 {
		c.PreAuthTimeout = DefaultPreAuthTimeout
	}
	return c
}

// RaiseFDLimit sets the soft RLIMIT_NOFILE to the hard one and returns the
// soft limit then in force (0 when it cannot be read). The Go runtime does
// the same at start on most systems; doing it here makes it independent of
// that and tells the daemon what it has to share.
func RaiseFDLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = raised.Max
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised) == nil {
			lim = raised
		}
	}
	return lim.Cur
}

// connLimiter tracks the listener's connections and their state.
type connLimiter struct {
	limits ConnLimits
	log    *slog.Logger
	onShed func(reason string) // metrics: "refused", "evicted"

	mu     sync.Mutex
	conns  map[*limitedConn]struct{}
	byAddr map[string]int
}

func newConnLimiter(c ConnLimits, log *slog.Logger, onShed func(string)) *connLimiter {
	if onShed == nil {
		onShed = func(string) {}
	}
	return &connLimiter{limits: c, log: log, onShed: onShed, conns: map[*limitedConn]struct{}{}, byAddr: map[string]int{}}
}

// limitedConn is one accepted connection.
type limitedConn struct {
	net.Conn
	l        *connLimiter
	addr     string
	authed   atomic.Bool
	release  sync.Once
	idle     bool      // guarded by l.mu: between requests, or nothing read yet
	idleFrom time.Time // guarded by l.mu
}

// listener wraps ln so that it admits connections under the limits.
func (l *connLimiter) listener(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, l: l}
}

type limitedListener struct {
	net.Listener
	l *connLimiter
}

func (ll *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ll.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if lc := ll.l.admit(c); lc != nil {
			return lc, nil
		}
	}
}

// admit registers c, first closing an idle connection when a bound is
// reached; when none can go, it closes c and returns nil.
func (l *connLimiter) admit(c net.Conn) *limitedConn {
	addr := remoteIP(c.RemoteAddr())
	lc := &limitedConn{Conn: c, l: l, addr: addr, idle: true, idleFrom: time.Now()}
	var evict []*limitedConn
	l.mu.Lock()
	ok := true
	if l.limits.PerAddr > 0 && l.byAddr[addr] >= l.limits.PerAddr {
		v := l.idlest(addr)
		ok = v != nil
		if ok {
			evict = append(evict, v)
			l.forgetLocked(v)
		}
	}
	if ok && l.limits.Max > 0 && len(l.conns) >= l.limits.Max {
		v := l.idlest("")
		ok = v != nil
		if ok {
			evict = append(evict, v)
			l.forgetLocked(v)
		}
	}
	if ok {
		l.conns[lc] = struct{}{}
		l.byAddr[addr]++
	}
	l.mu.Unlock()
	for _, v := range evict {
		l.onShed("evicted")
		v.Conn.Close()
	}
	if !ok {
		l.onShed("refused")
		l.log.Debug("connection refused: limit reached", "addr", addr)
		c.Close()
		return nil
	}
	return lc
}

// idlest returns the idle connection (of addr, or any when addr is "") to
// close first: one that never authenticated before one that did, then the
// one idle longest. Called with l.mu held.
func (l *connLimiter) idlest(addr string) *limitedConn {
	var best *limitedConn
	for c := range l.conns {
		if !c.idle || addr != "" && c.addr != addr {
			continue
		}
		if best == nil {
			best = c
			continue
		}
		ca, ba := c.authed.Load(), best.authed.Load()
		if ca != ba {
			if !ca {
				best = c
			}
			continue
		}
		if c.idleFrom.Before(best.idleFrom) {
			best = c
		}
	}
	return best
}

func (l *connLimiter) forgetLocked(c *limitedConn) {
	if _, ok := l.conns[c]; !ok {
		return
	}
	delete(l.conns, c)
	if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
		delete(l.byAddr, c.addr)
	}
}

// connState is the http.Server's ConnState hook: it keeps each
// connection's idleness, and forgets connections that ended or left HTTP.
func (l *connLimiter) connState(c net.Conn, s http.ConnState) {
	lc, ok := asLimited(c)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateNew, http.StateIdle:
		lc.idle, lc.idleFrom = true, time.Now()
	case http.StateActive:
		lc.idle = false
	case http.StateHijacked, http.StateClosed:
		lc.idle = false
		l.forgetLocked(lc)
	}
}

// open is the number of connections held, and of those busy with a request.
func (l *connLimiter) open() (all, busy int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		if !c.idle {
			busy++
		}
	}
	return len(l.conns), busy
}

func (c *limitedConn) Close() error {
	c.release.Do(func() {
		c.l.mu.Lock()
		c.l.forgetLocked(c)
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// ReadFrom keeps the connection's own ReadFrom (sendfile, splice) for
// net/http, which looks for it on the connection: dav's GET sends chunk
// files through it.
func (c *limitedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// CloseWrite keeps the half-close net/http uses to let a client read an
// error answer before the connection ends.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// asLimited finds the limitedConn under c (a TLS connection wraps it).
func asLimited(c net.Conn) (*limitedConn, bool) {
	// Under TLS the limited connection is one or two wrappers down
	// (tlsbulk.Conn, or tls.Conn over tlsbulk's guard).
	for range 3 {
		if lc, ok := c.(*limitedConn); ok {
			return lc, true
		}
		u, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil, false
		}
		c = u.NetConn()
	}
	return nil, false
}

// SetReadDeadline shortens the deadlines the HTTP server sets while
// waiting for a request (its header and idle timeouts) to PreAuthTimeout
// until a request on the connection authenticated. A zero deadline (no
// limit, e.g. while a body streams in) is left alone.
func (c *limitedConn) SetReadDeadline(t time.Time) error {
	if d := c.l.limits.PreAuthTimeout; d > 0 && !t.IsZero() && !c.authed.Load() {
		if short := time.Now().Add(d); short.Before(t) {
			t = short
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func remoteIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

type connKey struct{}

// connContext is the http.Server's ConnContext hook: requests find their
// connection to mark it authenticated.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if lc, ok := asLimited(c); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// markAuthenticated gives r's connection the server's ordinary timeouts
// from now on.
func markAuthenticated(r *http.Request) {
	if lc, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
		lc.authed.Store(true)
	}
}
