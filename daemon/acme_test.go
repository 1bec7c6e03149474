package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"netdisk/testutil"
)

const acmeTestDomain = "drive.netdisk.test"

// servedLeaf handshakes with addr as a client of name trusting roots and
// returns the certificate it was served.
func servedLeaf(t *testing.T, addr, name string, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: name, RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatalf("handshake as %s: %v", name, err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0]
}

// An ACME certificate is obtained from the CA (Pebble, validating the
// TLS-ALPN-01 challenge on the daemon's port for real), kept in the data
// directory and served; renewal is decided on the daemon's clock: a check
// a minute before the renewal point orders nothing, a check a minute after
// it orders one new certificate, which is served from then on.
func TestACMEIssueAndRenewOnClock(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	port := testutil.FreePort(t)
	pebble := testutil.StartPebble(t, port, 0)
	clock := testutil.NewClock(time.Now())
	var logs testutil.SyncBuffer
	dir := t.TempDir()
	d, err := Open(ctx, Options{DataDir: dir, ChunkSize: 64 << 10, AdminPass: "admin-pass", Out: io.Discard,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)), Now: clock.Now,
		ACMEDomains: []string{acmeTestDomain}, ACMECA: pebble.DirURL, ACMECARoot: pebble.CAFile,
		ACMECheck: time.Hour}) // checks below are the test's own (checkNow)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	certs := make(chan *acmeCerts, 1)
	d.onACME = func(c *acmeCerts) { certs <- c }
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.ServeListener(ctx, ln) }()
	defer func() { cancel(); <-served }()
	c := <-certs
	// The first check (at start) has run once a check asked after it ran.
	if err := c.checkNow(ctx); err != nil {
		t.Fatal(err)
	}
	addr, roots := ln.Addr().String(), pebble.Roots(t)
	first := servedLeaf(t, addr, acmeTestDomain, roots)
	if got := pebble.Orders(); got != 1 {
		t.Fatalf("CA saw %d orders after the first check, want 1\n%s", got, logs.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "acme", acmeTestDomain)); err != nil {
		t.Fatalf("the certificate is not kept in the data directory: %v", err)
	}

	life := first.NotAfter.Sub(first.NotBefore)
	renewAt := first.NotAfter.Add(-min(acmeRenewMax, life/3))
	clock.Advance(renewAt.Sub(clock.Now()) - time.Minute)
	if err := c.checkNow(ctx); err != nil {
		t.Fatal(err)
	}
	if got := pebble.Orders(); got != 1 {
		t.Fatalf("a check before the renewal point ordered: %d orders, want 1", got)
	}
	if again := servedLeaf(t, addr, acmeTestDomain, roots); !again.Equal(first) {
		t.Fatal("a check before the renewal point changed the certificate served")
	}

	clock.Advance(2 * time.Minute)
	if err := c.checkNow(ctx); err != nil {
		t.Fatal(err)
	}
	if got := pebble.Orders(); got != 2 {
		t.Fatalf("a check past the renewal point: %d orders, want 2\n%s", got, logs.String())
	}
	renewed := servedLeaf(t, addr, acmeTestDomain, roots)
	if renewed.Equal(first) {
		t.Fatal("renewed, yet the old certificate is still served")
	}
	// A name that is not ours gets the first domain's certificate, which
	// its client refuses; the CA is not asked for it.
	if _, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "other.netdisk.test", RootCAs: roots}); err == nil {
		t.Fatal("a handshake for another name verified")
	}
	if got := pebble.Orders(); got != 2 {
		t.Fatalf("a handshake for another name ordered: %d orders, want 2", got)
	}
}
