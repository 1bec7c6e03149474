package tlsconf_test

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netdisk/internal/tlsconf"
	"netdisk/testutil"
)

func served(t *testing.T, r *tlsconf.Reloader) string {
	t.Helper()
	c, err := r.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return tlsconf.Fingerprint(c.Certificate[0])
}

// TestReloaderCheck: Check takes a pair replaced on disk, and only then; a
// pair that does not load (the certificate renewed, its key not yet) keeps
// the certificate in service and is taken once it loads.
func TestReloaderCheck(t *testing.T) {
	ca := testutil.NewTestCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	fp1 := ca.Issue(t, cert, key)
	r, err := tlsconf.NewReloader(cert, key, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := r.Check(); changed || err != nil {
		t.Fatalf("Check of unchanged files: %v, %v", changed, err)
	}
	if got := served(t, r); got != fp1 {
		t.Fatalf("served %s, want %s", got, fp1)
	}

	// Half a renewal: a new certificate beside the old key.
	other := t.TempDir()
	fp2 := ca.Issue(t, filepath.Join(other, "c.pem"), filepath.Join(other, "k.pem"))
	b, _ := os.ReadFile(filepath.Join(other, "c.pem"))
	os.WriteFile(cert, b, 0o600)
	if changed, err := r.Check(); changed || err == nil {
		t.Fatalf("Check of a mismatched pair: %v, %v; want an error", changed, err)
	}
	if got := served(t, r); got != fp1 {
		t.Fatalf("after a failed load served %s, want the previous %s", got, fp1)
	}
	b, _ = os.ReadFile(filepath.Join(other, "k.pem"))
	os.WriteFile(key, b, 0o600)
	if changed, err := r.Check(); !changed || err != nil {
		t.Fatalf("Check of the completed renewal: %v, %v", changed, err)
	}
	if got := served(t, r); got != fp2 {
		t.Fatalf("served %s, want the renewed %s", got, fp2)
	}
	if changed, _ := r.Check(); changed {
		t.Fatal("Check reloaded unchanged files again")
	}
}

// TestClientOptions: a fingerprint in any accepted spelling, a bad one
// refused, a CA file without certificates refused.
func TestClientOptions(t *testing.T) {
	hex := strings.Repeat("ab", 32)
	for _, good := range []string{hex, strings.ToUpper(hex), strings.Repeat("AB:", 31) + "AB", "sha256:" + hex} {
		if _, err := tlsconf.Client(tlsconf.ClientOptions{Fingerprint: good}); err != nil {
			t.Errorf("fingerprint %q: %v", good, err)
		}
	}
	for _, bad := range []string{"abc", "zz" + hex[2:], hex + "ab", hex[2:]} {
		if _, err := tlsconf.Client(tlsconf.ClientOptions{Fingerprint: bad}); err == nil {
			t.Errorf("fingerprint %q accepted", bad)
		}
	}
	empty := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(empty, []byte("not a certificate"), 0o600)
	if _, err := tlsconf.Client(tlsconf.ClientOptions{CAFile: empty}); err == nil {
		t.Error("a CA file without certificates accepted")
	}
	if cfg, err := tlsconf.Client(tlsconf.ClientOptions{}); cfg != nil || err != nil {
		t.Errorf("no options: %v, %v; want Go's defaults", cfg, err)
	}
}

// TestSelfSignedKeptNeverReplaced: the pair is made once and returned as it
// is afterwards; one that no longer loads is an error, not silently
// replaced by a new certificate clients have not pinned.
func TestSelfSignedKeptNeverReplaced(t *testing.T) {
	dir := t.TempDir()
	cert, key, err := tlsconf.SelfSigned(dir, []string{"192.0.2.7", "drive.lan"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(cert)
	if _, _, err := tlsconf.SelfSigned(dir, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(cert); !bytes.Equal(first, again) {
		t.Fatal("the self-signed certificate was made again")
	}
	os.WriteFile(key, []byte("damaged"), 0o600)
	if _, _, err := tlsconf.SelfSigned(dir, nil, time.Now()); err == nil {
		t.Fatal("a damaged pair was accepted")
	}
	if again, _ := os.ReadFile(cert); !bytes.Equal(first, again) {
		t.Fatal("a damaged pair was replaced")
	}
}
