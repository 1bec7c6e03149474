package server

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"netdisk/internal/tlsbulk"
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
	// TLS, when set before Serve, makes the listener speak HTTPS only (a
	// plain HTTP request is answered 400 by net/http) with HTTP/2 offered
	// by ALPN, and every answer carries HSTS.
	TLS *tls.Config
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
	if l.TLS != nil {
		l.hs.Handler = hsts(l.hs.Handler)
		// The connection limits stay under TLS: the TLS connections wrap
		// the limited ones, which the ConnState and ConnContext hooks reach
		// through NetConn (asLimited). tlsbulk hands net/http HTTP/1.1
		// connections whose answers it seals itself, and the rest (HTTP/2)
		// as crypto/tls connections; net/http sets HTTP/2 up for them
		// (a server without a TLSConfig serving a listener of its own).
		go func() { errc <- l.hs.Serve(tlsbulk.NewListener(l.ln, l.TLS)) }()
	} else {
		go func() { errc <- l.hs.Serve(l.ln) }()
	}
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

// hstsMaxAge is one year, the value browsers' preload lists ask for.
const hstsMaxAge = "max-age=31536000"

// hsts tells browsers that reached us over TLS to come back only over TLS,
// so a later plain http:// link cannot expose the session cookie.
func hsts(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil {
			w.Header().Set("Strict-Transport-Security", hstsMaxAge)
		}
		h.ServeHTTP(w, r)
	})
}

// RedirectHTTPS answers every plain HTTP request with a 308 to the same
// host, path and query over HTTPS on httpsPort (left out when 443). 308
// keeps the method and body, so a client's PUT is not turned into a GET.
func RedirectHTTPS(httpsPort string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if host == "" || strings.ContainsAny(host, "/\\@?#") {
			http.Error(w, "this address serves HTTPS only", http.StatusBadRequest)
			return
		}
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
		if httpsPort != "443" {
			host += ":" + httpsPort
		}
		http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusPermanentRedirect)
	})
}
