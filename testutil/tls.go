package testutil

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"netdisk/internal/tlsconf"
)

// TestCA is a certificate authority made by a test, for daemons served
// over HTTPS with certificates the test issues.
type TestCA struct {
	CAFile string // the CA certificate in PEM, for --ca-file and curl --cacert
	Pool   *x509.CertPool
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
}

// NewTestCA makes a CA in a temp directory of t.
func NewTestCA(t testing.TB) *TestCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netdisk test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &TestCA{CAFile: filepath.Join(t.TempDir(), "ca.pem"), Pool: x509.NewCertPool(), cert: cert, key: key}
	ca.Pool.AddCert(cert)
	writePEM(t, ca.CAFile, "CERTIFICATE", der)
	return ca
}

// Issue writes a server certificate for 127.0.0.1, ::1 and localhost signed
// by ca to certFile and keyFile (replacing them whole, as a renewal does) and
// returns its SHA-256 fingerprint.
func (ca *TestCA) Issue(t testing.TB, certFile, keyFile string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "netdisk test server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "PRIVATE KEY", kb)
	writePEM(t, certFile, "CERTIFICATE", der)
	return tlsconf.Fingerprint(der)
}

// Client is an HTTP client trusting ca (HTTP/2 offered, as browsers do).
func (ca *TestCA) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, ForceAttemptHTTP2: true}}
}

// writePEM replaces name whole (a temp file renamed over it), so a daemon
// polling it never reads half a file.
func writePEM(t testing.TB, name, typ string, der []byte) {
	t.Helper()
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
}

// RequestsByProtocol reads the daemon's count of requests by HTTP version
// ("1.0", "1.1", "2": netdisk_http_requests_by_protocol_total) from
// /metrics as its admin, through hc. That read is itself counted, in the
// next reading, under the version hc speaks.
func (d *Daemon) RequestsByProtocol(ctx context.Context, hc *http.Client) (map[string]int, error) {
	req, err := d.Request(ctx, "GET", "/metrics", "admin", d.AdminPass, nil, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	got := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), `netdisk_http_requests_by_protocol_total{protocol="`)
		if !ok {
			continue
		}
		proto, n, _ := strings.Cut(rest, `"} `)
		v, err := strconv.ParseFloat(n, 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", sc.Text(), err)
		}
		got[proto] = int(v)
	}
	return got, sc.Err()
}
