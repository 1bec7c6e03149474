// Package pprofserve serves the Go profiler (net/http/pprof) on a loopback
// listener of its own, for measuring a daemon or a mount (--pprof). The
// profiles reveal internals and cost CPU, so they never share the
// authenticated public listener. It is a leaf: the mount links it without
// linking the server.
package pprofserve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync"
	"time"
)

// Server is a running profiler listener. Its owner ends it with Close (or by
// ending the context it was started with) and Close waits for everything it
// started: the accept loop and every request in flight.
type Server struct {
	hs       *http.Server
	addr     string
	served   chan struct{} // closed when the accept loop returned
	mu       sync.Mutex
	closing  bool // set by Close: no handler starts after it
	handlers sync.WaitGroup
	stop     func() bool // unregisters the context's end
}

// Start listens on addr, which must be a loopback address ("localhost",
// 127.0.0.1:6060, [::1]:0), and serves the profiler until ctx ends or Close
// is called.
func Start(ctx context.Context, addr string, log *slog.Logger) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--pprof %s: only a loopback address is allowed", addr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	s := &Server{addr: ln.Addr().String(), served: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// http.Server.Close does not wait for handlers; a CPU profile or a
	// trace runs for its seconds, so the handlers are counted here.
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			http.Error(w, "closing", http.StatusServiceUnavailable)
			return
		}
		defer s.handlers.Done()
		mux.ServeHTTP(w, r)
	})
	s.hs = &http.Server{Addr: s.addr, Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	log.Warn("profiler listening (--pprof)", "addr", s.addr)
	go func() {
		defer close(s.served)
		if err := s.hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Warn("pprof: serve", "err", err)
		}
	}()
	s.stop = context.AfterFunc(ctx, func() { s.hs.Close() })
	return s, nil
}

// Addr is the address the profiler listens on (the port chosen, for ":0").
func (s *Server) Addr() string { return s.addr }

// Close stops listening, cuts the open connections (a profile in progress
// ends: its request's context is cancelled) and waits until the accept loop
// and every handler returned.
func (s *Server) Close() error {
	s.stop()
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	err := s.hs.Close()
	<-s.served
	s.handlers.Wait()
	return err
}

// enter counts a handler in, unless Close began (a request read just before
// the connections were cut must not start after Close's wait).
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	s.handlers.Add(1)
	return true
}
