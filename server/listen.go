package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long a graceful shutdown lets in-flight requests
// finish before their connections are closed.
const shutdownGrace = 30 * time.Second

// Listening is the public listener made ready to serve: wrapped in the
// connection limits (connlimit.go) under an http.Server with netdisk's
// limits. Whoever owns the daemon's lifetime decides when it serves.
type Listening struct {
	s  *Server
	hs *http.Server
	ln net.Listener
	// Limits are the connection limits in force (DefaultConnLimits of the
	// configured ones), FDLimit the file-descriptor limit they follow.
	Limits  ConnLimits
	FDLimit uint64
}

// Listen prepares ln to be served under the connection limits c (zero fields
// take DefaultConnLimits, after raising the file-descriptor limit). The
// caller then serves it (Serve) or closes it (Close).
func (s *Server) Listen(ln net.Listener, c ConnLimits) *Listening {
	hs := s.HTTPServer(ln.Addr().String())
	fds := RaiseFDLimit()
	limits := DefaultConnLimits(c, fds)
	cl := newConnLimiter(limits, s.log, s.metrics.connShed)
	s.metrics.watchConns(cl)
	hs.ConnState, hs.ConnContext = cl.connState, connContext
	return &Listening{s: s, hs: hs, ln: cl.listener(ln), Limits: limits, FDLimit: fds}
}

// Close closes the listener without serving it.
func (l *Listening) Close() error { return l.ln.Close() }

// Serve serves until ctx is cancelled, then shuts down gracefully: the
// long-lived streams end (EndStreams) and in-flight requests get
// shutdownGrace. The listener is closed when it returns.
func (l *Listening) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- l.hs.Serve(l.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log := l.s.log
	log.Info("shutting down")
	l.s.EndStreams()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := l.hs.Shutdown(sctx); err != nil {
		log.Warn("shutdown", "err", err)
		l.hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
