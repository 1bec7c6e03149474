package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"netdisk/internal/tick"
	"netdisk/internal/tlsconf"
	"netdisk/server"
)

// tlsCertificates loads the certificate the public listener ln serves: the
// configured pair, or the data directory's self-signed one (issued for ln's
// address too), whose fingerprint is logged for clients to pin.
func (d *Daemon) tlsCertificates(ln net.Listener) (*tlsconf.Reloader, error) {
	log := d.opts.Logger
	cert, key := d.opts.TLSCert, d.opts.TLSKey
	if d.opts.TLSSelfSigned {
		host, _, _ := net.SplitHostPort(ln.Addr().String())
		now := time.Now
		if d.opts.Now != nil {
			now = d.opts.Now
		}
		var err error
		if cert, key, err = tlsconf.SelfSigned(d.opts.DataDir, []string{host}, now()); err != nil {
			return nil, err
		}
	}
	r, err := tlsconf.NewReloader(cert, key, log)
	if err != nil {
		return nil, err
	}
	if d.opts.TLSSelfSigned {
		log.Info("tls: self-signed certificate; clients pin it with --tls-fingerprint", "sha256", r.Fingerprint())
	}
	return r, nil
}

// watchCertificates re-reads the certificate when its files change and on
// each TLSReload signal until ctx ends. A pair that fails to load is logged
// and the certificate in service stays.
func (d *Daemon) watchCertificates(ctx context.Context, r *tlsconf.Reloader) {
	log := d.opts.Logger
	every := d.opts.TLSPoll
	if every <= 0 {
		every = DefaultTLSPoll
	}
	go tick.Every(ctx, every, func(context.Context) {
		if _, err := r.Check(); err != nil {
			log.Error("tls: certificate files changed but do not load; serving the previous certificate", "err", err)
		}
	})
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.opts.TLSReload:
			if err := r.Reload(); err != nil {
				log.Error("tls: reload refused; serving the previous certificate", "err", err)
			}
		}
	}
}

// serveRedirect serves plain HTTP on addr (given by flag) with h: requests
// redirected to the HTTPS listener, and ACME's HTTP-01 challenges answered
// when ACME is on. stop closes it and waits for its accept loop.
func serveRedirect(flag, addr string, h http.Handler, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout: time.Minute, MaxHeaderBytes: server.MaxHeaderBytes,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	log.Info("redirecting plain HTTP to HTTPS ("+flag+")", "addr", ln.Addr().String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		hs.Serve(ln) // ErrServerClosed once stop closes it
	}()
	return func() {
		hs.Close()
		<-done
	}, nil
}
