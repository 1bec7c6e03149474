package testutil

import (
	"context"
	"crypto/x509"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// PebbleVersion is the ACME test server the tests run (Let's Encrypt's
// Pebble, a real ACME CA in one process with its own roots). It is built
// once into VersityGWDir.
const PebbleVersion = "v2.10.1"

// Pebble is a real ACME CA on a free loopback port. Its validation
// authority resolves every name to 127.0.0.1 (through a DNS server of the
// helper's) and connects to TLSPort for TLS-ALPN-01 and HTTPPort for
// HTTP-01: a daemon given those ports answers its challenges for real.
type Pebble struct {
	DirURL   string // the ACME directory, for --acme-ca
	CAFile   string // the CA of Pebble's own HTTPS listener, for --acme-ca-root
	TLSPort  int
	HTTPPort int
	mgmt     string // management address: the issuing roots
	ca       *TestCA
	proc     *proc
}

// pebbleBin returns the pebble binary, building it when it is not cached.
func pebbleBin() (string, error) {
	bin := filepath.Join(VersityGWDir(), "pebble")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/letsencrypt/pebble/v2/cmd/pebble@"+PebbleVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+VersityGWDir(), "GOFLAGS=-buildvcs=false")
	cmd.Dir = os.TempDir() // outside this module: its own go.mod decides
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build pebble %s: %v\n%s", PebbleVersion, err, out)
	}
	return bin, nil
}

// FreePort is a loopback port nothing listens on now, for a daemon whose
// port must be known before it starts (StartPebble's TLSPort).
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// StartPebble starts Pebble validating challenges on tlsPort and httpPort
// of 127.0.0.1 (0: a port no test uses), stopped at cleanup. Its random
// nonce rejections and validation sleeps are off, so a test's order takes
// well under a second. A Pebble that cannot be had skips the test locally
// and fails it under CI.
func StartPebble(t testing.TB, tlsPort, httpPort int) *Pebble {
	t.Helper()
	bin, err := pebbleBin()
	if err != nil {
		if InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if tlsPort == 0 {
		tlsPort = FreePort(t)
	}
	if httpPort == 0 {
		httpPort = FreePort(t)
	}
	dns := startLoopbackDNS(t)
	dir := t.TempDir()
	p := &Pebble{TLSPort: tlsPort, HTTPPort: httpPort, ca: NewTestCA(t)}
	p.CAFile = p.ca.CAFile
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	p.ca.Issue(t, certFile, keyFile)
	err = onFreePort(func(addr string) error {
		mgmt := net.JoinHostPort("127.0.0.1", fmt.Sprint(FreePort(t)))
		var c struct {
			Pebble map[string]any `json:"pebble"`
		}
		c.Pebble = map[string]any{
			"listenAddress": addr, "managementListenAddress": mgmt,
			"certificate": certFile, "privateKey": keyFile,
			"httpPort": httpPort, "tlsPort": tlsPort, "keyAlgorithm": "ecdsa",
		}
		b, _ := json.Marshal(c)
		cfg := filepath.Join(dir, "pebble.json")
		if err := os.WriteFile(cfg, b, 0o600); err != nil {
			return err
		}
		cmd := exec.Command(bin, "-config", cfg, "-dnsserver", dns)
		cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
		pr, err := startProc("pebble", cmd, nil)
		if err != nil {
			return err
		}
		p.proc, p.DirURL, p.mgmt = pr, "https://"+addr+"/dir", mgmt
		hc := p.ca.Client()
		return pr.waitReady(context.Background(), 20*time.Second, 20*time.Millisecond, func() error {
			resp, err := hc.Get(p.DirURL)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("directory: %s", resp.Status)
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.proc.stop(5 * time.Second) })
	return p
}

// Roots is Pebble's issuing root, which verifies the certificates it
// issued (a new one at each start of Pebble).
func (p *Pebble) Roots(t testing.TB) *x509.CertPool {
	t.Helper()
	resp, err := p.ca.Client().Get("https://" + p.mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("pebble root: %s %v", resp.Status, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("pebble root: no certificate in %q", b)
	}
	return pool
}

// RootFile writes Pebble's issuing root to a PEM file (curl --cacert,
// --ca-file) and returns its name.
func (p *Pebble) RootFile(t testing.TB) string {
	t.Helper()
	resp, err := p.ca.Client().Get("https://" + p.mgmt + "/roots/0")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	name := filepath.Join(t.TempDir(), "pebble-root.pem")
	if err := os.WriteFile(name, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// Orders is how many orders the CA has received, from its own log: each
// new order is logged "Added order …".
func (p *Pebble) Orders() int { return strings.Count(p.proc.log.String(), "Added order ") }

// Issued is how many certificates the CA has issued.
func (p *Pebble) Issued() int {
	return strings.Count(p.proc.log.String(), "Issued certificate serial ")
}

// Logs is what Pebble printed.
func (p *Pebble) Logs() string { return p.proc.log.String() }

// startLoopbackDNS serves DNS over TCP on a free loopback port until the
// test ends, answering every A question with 127.0.0.1 and every other
// question with no record, and returns its address: Pebble's validation
// authority then reaches the daemon on loopback under any name.
func startLoopbackDNS(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				for answerDNS(c) == nil {
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// answerDNS answers one length-prefixed DNS query on c.
func answerDNS(c net.Conn) error {
	c.SetDeadline(time.Now().Add(30 * time.Second))
	var n uint16
	if err := binary.Read(c, binary.BigEndian, &n); err != nil {
		return err
	}
	q := make([]byte, n)
	if _, err := io.ReadFull(c, q); err != nil {
		return err
	}
	var m dnsmessage.Message
	if err := m.Unpack(q); err != nil {
		return err
	}
	if len(m.Questions) != 1 {
		return errors.New("dns: one question per query")
	}
	qq := m.Questions[0]
	r := dnsmessage.Message{Header: dnsmessage.Header{ID: m.ID, Response: true, Authoritative: true, RecursionDesired: m.RecursionDesired, RecursionAvailable: true},
		Questions: m.Questions}
	if qq.Type == dnsmessage.TypeA {
		r.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: qq.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
			Body: &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}}}}
	}
	b, err := r.Pack()
	if err != nil {
		return err
	}
	out := binary.BigEndian.AppendUint16(nil, uint16(len(b)))
	_, err = c.Write(append(out, b...))
	return err
}
