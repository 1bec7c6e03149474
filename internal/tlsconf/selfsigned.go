package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"netdisk/internal/atomicfile"
)

// SelfSignedFiles are the paths of the self-signed pair under a data
// directory.
func SelfSignedFiles(dataDir string) (certFile, keyFile string) {
	dir := filepath.Join(dataDir, "tls")
	return filepath.Join(dir, "self-signed.crt"), filepath.Join(dir, "self-signed.key")
}

// SelfSigned returns the self-signed pair of dataDir, generating it on first
// use: clients pin its fingerprint, so once made it is kept across restarts
// and never replaced behind their back (a pair that no longer loads is an
// error, not a reason to make a new one). hosts are the names and addresses
// it is issued for, beside localhost and the loopback addresses.
func SelfSigned(dataDir string, hosts []string, now time.Time) (certFile, keyFile string, err error) {
	certFile, keyFile = SelfSignedFiles(dataDir)
	_, cerr := os.Stat(certFile)
	if cerr == nil {
		if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
			return "", "", fmt.Errorf("tls: self-signed certificate in %s: %w (remove both files to make a new one; clients must then pin the new fingerprint)", filepath.Dir(certFile), err)
		}
		return certFile, keyFile, nil
	}
	if !errors.Is(cerr, fs.ErrNotExist) {
		return "", "", fmt.Errorf("tls: %w", cerr)
	}
	certPEM, keyPEM, err := generate(hosts, now)
	if err != nil {
		return "", "", err
	}
	// The key first: the certificate's presence is what says the pair is
	// complete, so a crash between the two makes a new pair next start.
	for _, f := range []struct {
		name string
		b    []byte
	}{{keyFile, keyPEM}, {certFile, certPEM}} {
		if err := atomicfile.Write(f.name, 0o600, func(w io.Writer) error { _, err := w.Write(f.b); return err }); err != nil {
			return "", "", fmt.Errorf("tls: writing %s: %w", f.name, err)
		}
	}
	return certFile, keyFile, nil
}

func generate(hosts []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "netdisk self-signed"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0), // pinned, not renewed
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // so that --ca-file can take the certificate itself
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		tmpl.DNSNames = append(tmpl.DNSNames, h)
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !ip.IsUnspecified() {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			}
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), nil
}
