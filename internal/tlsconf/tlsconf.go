// Package tlsconf holds netdisk's TLS settings on both sides. The daemon's
// certificate is served through GetCertificate from an atomically swapped
// pointer, so a certificate renewed on disk (certbot, an ACME client, every
// 60-90 days) is taken by new connections without a restart while the open
// ones keep the one they negotiated. A self-signed certificate for LAN use
// is generated once into the data directory and kept, so the fingerprint
// clients pin stays valid. Clients verify against the system roots plus an
// optional CA file, or pin the server's leaf certificate by its SHA-256.
package tlsconf

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Server returns the daemon's TLS configuration: Go's defaults from TLS 1.2
// on, HTTP/2 offered by ALPN before HTTP/1.1, the certificate from get.
func Server(get func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: get,
		NextProtos:     []string{"h2", "http/1.1"},
	}
}

// Fingerprint is the SHA-256 of a DER certificate in lower-case hex, the
// form --tls-fingerprint takes.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// Reloader serves the certificate of a certificate file and key file and
// re-reads them on Reload (SIGHUP) or when Check sees them changed.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger
	cur               atomic.Pointer[tls.Certificate]
	mu                sync.Mutex // serialises loads and guards stamp
	stamp             string
}

// NewReloader loads the pair once: a daemon told to serve TLS with files it
// cannot read stops at start rather than serving nothing.
func NewReloader(certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: log}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// GetCertificate is the tls.Config hook: the certificate loaded last.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cur.Load(), nil
}

// Fingerprint is the SHA-256 of the leaf certificate served now.
func (r *Reloader) Fingerprint() string { return Fingerprint(r.cur.Load().Certificate[0]) }

// Reload reads the pair again. A pair that does not load (a renewal caught
// between writing the certificate and the key, a typo) leaves the previous
// certificate in service and is tried again at the next Check.
func (r *Reloader) Reload() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.loadLocked(r.stampOf())
}

// Check reloads the pair when either file's identity, size or modification
// time changed since the last successful load, and reports whether it did.
// Polling these keeps renewals working on every file system (renames over
// symlinks as certbot does, network mounts) without a watcher dependency.
func (r *Reloader) Check() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stampOf()
	if s == r.stamp {
		return false, nil
	}
	if err := r.loadLocked(s); err != nil {
		return false, err
	}
	return true, nil
}

func (r *Reloader) loadLocked(stamp string) error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("tls: loading %s and %s: %w", r.certFile, r.keyFile, err)
	}
	r.cur.Store(&c)
	r.stamp = stamp
	r.log.Info("tls: certificate loaded", "cert", r.certFile, "sha256", Fingerprint(c.Certificate[0]),
		"subject", c.Leaf.Subject.String(), "not_after", c.Leaf.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

func (r *Reloader) stampOf() string {
	var b strings.Builder
	for _, name := range []string{r.certFile, r.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			fmt.Fprintf(&b, "%s:missing;", name)
			continue
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		fmt.Fprintf(&b, "%s:%d:%d:%d;", name, ino, fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}

// ClientOptions are the clients' verification settings.
type ClientOptions struct {
	// CAFile is a PEM file of certificates trusted beside the system roots
	// (a private CA, or a self-signed certificate itself).
	CAFile string
	// Fingerprint pins the server's leaf certificate by its SHA-256 (hex,
	// colons and case ignored): only that certificate is accepted, whoever
	// signed it and whatever names it holds.
	Fingerprint string
}

// Client returns the clients' TLS configuration: nil (Go's defaults, the
// system roots) when o asks for nothing else.
func Client(o ClientOptions) (*tls.Config, error) {
	if o.CAFile == "" && o.Fingerprint == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--ca-file: %w", err)
		}
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca-file %s: no PEM certificate in it", o.CAFile)
		}
		cfg.RootCAs = roots
	}
	if o.Fingerprint != "" {
		want, err := parseFingerprint(o.Fingerprint)
		if err != nil {
			return nil, err
		}
		// The pin replaces the chain and name checks, which a self-signed
		// certificate cannot pass; VerifyConnection makes the pin the check,
		// so nothing is accepted unverified.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return &PinError{Want: hex.EncodeToString(want)}
			}
			sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if !bytes.Equal(sum[:], want) {
				return &PinError{Want: hex.EncodeToString(want), Got: hex.EncodeToString(sum[:])}
			}
			return nil
		}
	}
	return cfg, nil
}

func parseFingerprint(s string) ([]byte, error) {
	s = strings.ToLower(strings.NewReplacer(":", "", " ", "").Replace(strings.TrimPrefix(strings.TrimSpace(s), "sha256:")))
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("--tls-fingerprint %q: want the 64 hex digits of a SHA-256", s)
	}
	return b, nil
}

// PinError is a server certificate other than the pinned one.
type PinError struct{ Want, Got string }

func (e *PinError) Error() string {
	return fmt.Sprintf("server certificate SHA-256 %s is not the pinned %s", e.Got, e.Want)
}

// IsCertError reports whether err's chain holds a refused server
// certificate (not trusted, or not the pinned one): a client's own settings,
// which no retry changes.
func IsCertError(err error) bool { return err != nil && Explain("", err) != nil }

// Explain turns a certificate verification failure anywhere in err's chain
// into one line that names the fix; other errors give nil. server is the
// URL the client used.
func Explain(server string, err error) error {
	var pe *PinError
	if errors.As(err, &pe) {
		return fmt.Errorf("TLS: %s at %s: check --tls-fingerprint (NETDISK_TLS_FINGERPRINT) against `netdisk admin tls` on the server", pe.Error(), server)
	}
	var ve *tls.CertificateVerificationError
	var ua x509.UnknownAuthorityError
	var he x509.HostnameError
	var ci x509.CertificateInvalidError
	if errors.As(err, &ve) || errors.As(err, &ua) || errors.As(err, &he) || errors.As(err, &ci) {
		reason := err.Error()
		if ve != nil {
			reason = ve.Err.Error()
		}
		return fmt.Errorf("TLS: the certificate of %s is not trusted (%s): give its CA with --ca-file (NETDISK_CA_FILE) or pin it with --tls-fingerprint (NETDISK_TLS_FINGERPRINT)", server, reason)
	}
	return nil
}
