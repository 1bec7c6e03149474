package tlsbulk

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// HandshakeTimeout bounds a TLS handshake: a client that connects and says
// nothing holds a connection no longer (the connection limits may shorten
// it further through the deadlines they set).
const HandshakeTimeout = 30 * time.Second

// Listener accepts TLS connections with their handshake done, so that what
// it hands to net/http is a *Conn for HTTP/1.1 and a *tls.Conn for
// everything else: net/http serves HTTP/2 (and refuses other ALPN
// protocols, and reports a failed handshake, answering 400 to plain HTTP)
// only on a *tls.Conn, whose handshake it then finds done (or failed, with
// the same error). Handshakes run concurrently, each in its own goroutine,
// as net/http's own do; Accept returns connections as they are ready.
type Listener struct {
	inner  net.Listener
	config *tls.Config

	ctx    context.Context
	cancel context.CancelFunc
	start  sync.Once
	ready  chan accepted
	wg     sync.WaitGroup
	// handshaking counts handshakes under way (for tests).
	handshaking atomic.Int32
	// Timeout is the handshake's deadline (HandshakeTimeout if zero); set
	// before the first Accept.
	Timeout time.Duration
}

type accepted struct {
	c   net.Conn
	err error
}

// NewListener serves TLS on inner with config, which must offer
// "http/1.1" (and "h2" for HTTP/2) in NextProtos, as crypto/tls's
// NewListener would be used.
func NewListener(inner net.Listener, config *tls.Config) *Listener {
	ctx, cancel := context.WithCancel(context.Background())
	return &Listener{inner: inner, config: config, ctx: ctx, cancel: cancel, ready: make(chan accepted)}
}

// Accept returns the next connection whose handshake has ended.
func (l *Listener) Accept() (net.Conn, error) {
	l.start.Do(func() {
		l.wg.Add(1)
		go l.acceptLoop()
	})
	select {
	case a := <-l.ready:
		return a.c, a.err
	case <-l.ctx.Done():
		return nil, net.ErrClosed
	}
}

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		raw, err := l.inner.Accept()
		if err != nil {
			// net/http backs off on a temporary error and calls
			// Accept again; any other ends the loop and the server.
			select {
			case l.ready <- accepted{err: err}:
			case <-l.ctx.Done():
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				continue
			}
			return
		}
		l.wg.Add(1)
		go l.handshake(raw)
	}
}

func isTemporary(err error) bool {
	t, ok := err.(interface{ Temporary() bool })
	return ok && t.Temporary()
}

// handshake runs the TLS handshake of raw and hands the connection to
// Accept: a *Conn for HTTP/1.1, the *tls.Conn otherwise.
func (l *Listener) handshake(raw net.Conn) {
	defer l.wg.Done()
	l.handshaking.Add(1)
	catcher := &secretCatcher{}
	g := &guardConn{Conn: raw}
	tc := tls.Server(g, l.connConfig(catcher))
	timeout := l.Timeout
	if timeout == 0 {
		timeout = HandshakeTimeout
	}
	// The read deadline through raw's own SetReadDeadline, which the
	// connection limits shorten for a connection not yet authenticated.
	deadline := time.Now().Add(timeout)
	raw.SetReadDeadline(deadline)
	raw.SetWriteDeadline(deadline)
	err := tc.HandshakeContext(l.ctx)
	l.handshaking.Add(-1)
	raw.SetReadDeadline(time.Time{})
	raw.SetWriteDeadline(time.Time{})
	var c net.Conn = tc
	if err == nil {
		switch tc.ConnectionState().NegotiatedProtocol {
		case "", "http/1.1":
			c = newConn(tc, raw, g, catcher.take())
		}
	}
	select {
	case l.ready <- accepted{c: c}:
	case <-l.ctx.Done():
		raw.Close()
	}
}

// connConfig is the listener's config for one connection: the secret goes
// to that connection's catcher, and a client that will speak HTTP/1.1 (it
// does not offer "h2", which the server prefers) gets no session ticket,
// which crypto/tls would seal under the application key before the first
// record sent here. HTTP/2 and TLS 1.2 keep their tickets: crypto/tls
// sends on those connections.
func (l *Listener) connConfig(catcher *secretCatcher) *tls.Config {
	cfg := l.config.Clone()
	cfg.KeyLogWriter = catcher
	get := l.config.GetConfigForClient
	cfg.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		base := cfg
		if get != nil {
			c, err := get(h)
			if err != nil {
				return nil, err
			}
			if c != nil {
				base = c.Clone()
				base.KeyLogWriter = catcher
			}
		}
		if slices.Contains(h.SupportedProtos, "h2") || !slices.Contains(h.SupportedVersions, tls.VersionTLS13) {
			if base == cfg {
				return nil, nil
			}
			return base, nil
		}
		if base == cfg {
			base = cfg.Clone()
		}
		base.GetConfigForClient = nil
		base.SessionTicketsDisabled = true
		catcher.noTickets()
		return base, nil
	}
	return cfg
}

// Close stops accepting: handshakes under way are cut short and
// connections not yet accepted are closed.
func (l *Listener) Close() error {
	l.cancel()
	err := l.inner.Close()
	l.wg.Wait()
	return err
}

func (l *Listener) Addr() net.Addr { return l.inner.Addr() }
