package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

const acmeDomain = "drive.netdisk.test"

// acmeDaemon starts `netdisk serve --acme-domain` on port against pebble.
func acmeDaemon(t *testing.T, pebble *testutil.Pebble, port int, extra ...string) *testutil.Daemon {
	t.Helper()
	args := append([]string{"--acme-domain", acmeDomain, "--acme-ca", pebble.DirURL, "--acme-ca-root", pebble.CAFile,
		"--acme-email", "ops@netdisk.test"}, extra...)
	d, err := testutil.LaunchDaemon(context.Background(), testutil.DaemonConfig{Bin: testutil.Binary(t), DataDir: t.TempDir(),
		AdminPass: "admin-test-pass", Listen: fmt.Sprintf("127.0.0.1:%d", port), Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

// awaitCertificate waits until d serves a certificate for acmeDomain that
// roots verify (the daemon listens before it has one: the CA's challenge
// needs the listener) and returns it.
func awaitCertificate(t *testing.T, d *testutil.Daemon, roots *x509.CertPool) *x509.Certificate {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := tls.Dial("tcp", d.Addr, &tls.Config{ServerName: acmeDomain, RootCAs: roots})
		if err == nil {
			defer c.Close()
			return c.ConnectionState().PeerCertificates[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no certificate served after 60 s: %v\n%s", err, d.Logs())
		}
		time.Sleep(50 * time.Millisecond) // polling a condition, with a deadline
	}
}

// `netdisk serve --acme-domain` obtains its certificate from the CA (Pebble,
// which validates the challenge on the daemon's port) and serves it: curl,
// trusting only Pebble's root, speaks HTTP/2 to the drive under the name.
// The plain HTTP listener answers the HTTP-01 path itself (404 for a token
// the CA never set) rather than redirecting it, and redirects the rest.
func TestACMEServe(t *testing.T) {
	curl := testutil.RequireTool(t, "curl")
	port, httpPort := testutil.FreePort(t), testutil.FreePort(t)
	pebble := testutil.StartPebble(t, port, httpPort)
	d := acmeDaemon(t, pebble, port, "--http-redirect-listen", fmt.Sprintf("127.0.0.1:%d", httpPort))
	awaitCertificate(t, d, pebble.Roots(t))
	out, err := exec.Command(curl, "-sS", "--http2", "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
		"--cacert", pebble.RootFile(t), "--resolve", fmt.Sprintf("%s:%d:127.0.0.1", acmeDomain, port),
		"-u", "admin:"+d.AdminPass, "-X", "PROPFIND", "-H", "Depth: 0",
		fmt.Sprintf("https://%s:%d/dav/", acmeDomain, port)).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "207 2" {
		t.Fatalf("curl over HTTPS: %q %v, want \"207 2\"", out, err)
	}
	if got := pebble.Orders(); got != 1 {
		t.Fatalf("CA saw %d orders, want 1", got)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]int{"/.well-known/acme-challenge/never-set": 404, "/dav/": 308} {
		req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", httpPort, path), nil)
		req.Host = acmeDomain
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("plain HTTP %s: %d, want %d", path, resp.StatusCode, want)
		}
	}

	// Restarted on its data directory, the daemon serves the certificate
	// it kept there without asking the CA again.
	first := awaitCertificate(t, d, pebble.Roots(t))
	d.Stop()
	again, err := testutil.LaunchDaemon(context.Background(), testutil.DaemonConfig{Bin: testutil.Binary(t), DataDir: d.DataDir,
		AdminPass: d.AdminPass, Listen: d.Addr, Args: d.Args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(again.Stop)
	if got := awaitCertificate(t, again, pebble.Roots(t)); !got.Equal(first) {
		t.Fatal("after a restart the daemon serves another certificate")
	}
	if got := pebble.Orders(); got != 1 {
		t.Fatalf("after a restart the CA saw %d orders, want 1", got)
	}
}

// Two nodes sharing one metadata store (PostgreSQL) and one Redis, started
// together, get one certificate: one node orders under the lock
// acme:<domain>, the other waits and takes it from the store, and the CA
// sees one order. The CA validates on node a's port whichever node ordered:
// a answers a challenge b's order set from the shared store.
func TestACMETwoNodesOneOrder(t *testing.T) {
	pg, r := testutil.SharedPostgres(t), testutil.StartRedis(t)
	portA := testutil.FreePort(t)
	pebble := testutil.StartPebble(t, portA, 0)
	shared := []string{"--meta", pg.NewDatabase(t), "--redis", r.URL}
	// The second node starts as soon as the first listens: both check
	// for a certificate at start, so they meet at the lock.
	a := acmeDaemon(t, pebble, portA, shared...)
	b := acmeDaemon(t, pebble, testutil.FreePort(t), shared...)
	roots := pebble.Roots(t)
	ca, cb := awaitCertificate(t, a, roots), awaitCertificate(t, b, roots)
	if !ca.Equal(cb) {
		t.Fatalf("the nodes serve two certificates (serials %x and %x)", ca.SerialNumber, cb.SerialNumber)
	}
	for name, d := range map[string]*testutil.Daemon{"a": a, "b": b} {
		if strings.Contains(d.Logs(), "acme: ordering a certificate") {
			t.Logf("node %s ordered; the CA validated on node a", name)
		}
	}
	if got := pebble.Orders(); got != 1 {
		t.Fatalf("CA saw %d orders for two nodes, want 1\n%s", got, pebble.Logs())
	}
}

// --acme-domain takes DNS names only, normalised and each once: an
// address, a wildcard or a single label is refused before any order.
func TestParseACMEDomains(t *testing.T) {
	got, err := parseDomains(" Drive.Example.org., dav.example.org,drive.example.org,")
	if err != nil || strings.Join(got, " ") != "drive.example.org dav.example.org" {
		t.Fatalf("parseDomains: %q %v", got, err)
	}
	for _, bad := range []string{"", " , ", "*.example.org", "192.0.2.1", "::1", "localhost"} {
		if got, err := parseDomains(bad); err == nil {
			t.Errorf("parseDomains(%q) = %q, want an error", bad, got)
		}
	}
}

// The ACME flags are refused at start, in one line naming the flag, when
// they contradict each other, before anything is created.
func TestServeACMEFlagsRefused(t *testing.T) {
	for _, args := range [][]string{
		{"--acme-email=ops@example.org"},
		{"--acme-ca=https://ca.example/dir"},
		{"--acme-http-listen=127.0.0.1:0"},
		{"--acme-domain=drive.example.org", "--tls-self-signed"},
		{"--acme-domain=*.example.org"},
	} {
		data := filepath.Join(t.TempDir(), "data")
		msg := serveRefused(t, data, args...)
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "netdisk: --acme-") {
			t.Fatalf("%q: output %q is not the one-line refusal", args, msg)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("%q: the data directory was created before the refusal (%v)", args, err)
		}
	}
}

// HTTP-01 on --acme-http-listen: with the CA's TLS-ALPN-01 probe going to
// a port nothing listens on, that challenge fails and the daemon's next
// order proves the name by HTTP-01, answered on the plain HTTP listener.
func TestACMEHTTP01(t *testing.T) {
	port, httpPort := testutil.FreePort(t), testutil.FreePort(t)
	pebble := testutil.StartPebble(t, testutil.FreePort(t), httpPort)
	d := acmeDaemon(t, pebble, port, "--acme-http-listen", fmt.Sprintf("127.0.0.1:%d", httpPort))
	awaitCertificate(t, d, pebble.Roots(t))
	if !strings.Contains(pebble.Logs(), "Attempting to validate w/ HTTP:") || pebble.Issued() != 1 {
		t.Fatalf("the CA did not validate by HTTP-01:\n%s", pebble.Logs())
	}
}
