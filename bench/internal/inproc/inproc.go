// Package inproc runs netdisk's daemon inside a benchmark's own process, as
// `netdisk serve` wires it (daemon.Open), served on a free loopback port
// with Daemon.ServeListener. Benchmarks that measure the daemon as a
// separate process (its peak memory, a FUSE mount of it) launch the binary
// with testutil.LaunchDaemon instead.
package inproc

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"netdisk/daemon"
)

// AdminPass is the password of the daemon's user "admin".
const AdminPass = "bench-admin"

// Daemon is a daemon serving in this process.
type Daemon struct {
	*daemon.Daemon
	URL    string // http://127.0.0.1:PORT (https:// with TLS options)
	dir    string
	cancel context.CancelFunc
	served chan error
}

// Start opens a daemon over a new temp data directory, configured as o says
// (its data directory, admin password, logger and output are Start's), and
// serves it until Close.
func Start(ctx context.Context, o daemon.Options) (*Daemon, error) {
	dir, err := os.MkdirTemp("", "netdisk-bench-data-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	o.DataDir, o.AdminPass = filepath.Join(dir, "data"), AdminPass
	o.Logger, o.Out = slog.New(slog.NewTextHandler(io.Discard, nil)), io.Discard
	sd, err := daemon.Open(ctx, o)
	if err != nil {
		cancel()
		os.RemoveAll(dir)
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		sd.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	scheme := "http"
	if o.TLSCert != "" || o.TLSSelfSigned {
		scheme = "https"
	}
	d := &Daemon{Daemon: sd, URL: scheme + "://" + ln.Addr().String(), dir: dir, cancel: cancel, served: make(chan error, 1)}
	go func() { d.served <- sd.ServeListener(ctx, ln) }()
	return d, nil
}

// Close stops serving (in-flight requests finish), closes the daemon and
// removes its data directory.
func (d *Daemon) Close() error {
	d.cancel()
	err := <-d.served
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	err = errors.Join(err, d.Daemon.Close())
	os.RemoveAll(d.dir)
	return err
}
