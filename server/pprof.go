package server

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServePprof exposes the Go profiler on addr, on a mux and listener of its
// own: the profiles reveal internals and cost CPU, so they never share the
// authenticated public listener. It is for measuring (serve --pprof).
func ServePprof(addr string, log *slog.Logger) (*http.Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--pprof %s: only a loopback address is allowed", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	ps := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Warn("profiler listening (--pprof)", "addr", ln.Addr().String())
	go ps.Serve(ln)
	return ps, nil
}

// serveMetrics serves /metrics unauthenticated on addr, a listener of its own
// meant for loopback or a private network Prometheus scrapes from (the public
// listener's /metrics needs an admin).
func serveMetrics(addr string, h http.Handler, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	ms := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("metrics listening (--metrics-listen)", "addr", ln.Addr().String())
	go ms.Serve(ln)
	return ms, nil
}
