package daemon

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// serveMetrics serves /metrics unauthenticated on addr, a listener of its own
// meant for loopback or a private network Prometheus scrapes from (the public
// listener's /metrics needs an admin). stop closes it and waits for its
// accept loop, so nothing of it outlives the daemon's Serve.
func serveMetrics(addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	ms := &http.Server{Addr: ln.Addr().String(), Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("metrics listening (--metrics-listen)", "addr", ln.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ms.Serve(ln) // ErrServerClosed once stop closes it
	}()
	return func() {
		ms.Close()
		<-done
	}, nil
}
