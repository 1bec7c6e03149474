package metatest

import (
	"bytes"
	"testing"

	"netdisk/errs"
)

// The ACME cache: an entry reads back byte for byte (binary, not text),
// a put replaces it, a delete removes it (twice is success), and a missing
// entry is NotFound, which autocert's cache turns into its cache miss.
func testACMECache(t *testing.T, e *env) {
	if _, err := e.s.ACMECacheGet(e.ctx, "drive.example.org"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("missing entry: %v, want NotFound", err)
	}
	first := []byte("-----BEGIN EC PRIVATE KEY-----\x00\xff\n")
	e.must(e.s.ACMECachePut(e.ctx, "drive.example.org", first))
	e.must(e.s.ACMECachePut(e.ctx, "acme_account+key", []byte("account")))
	got, err := e.s.ACMECacheGet(e.ctx, "drive.example.org")
	e.must(err)
	if !bytes.Equal(got, first) {
		t.Fatalf("read back %q, want %q", got, first)
	}
	e.must(e.s.ACMECachePut(e.ctx, "drive.example.org", []byte("renewed")))
	if got, _ := e.s.ACMECacheGet(e.ctx, "drive.example.org"); string(got) != "renewed" {
		t.Fatalf("after a second put: %q, want the new data", got)
	}
	e.must(e.s.ACMECacheDelete(e.ctx, "drive.example.org"))
	e.must(e.s.ACMECacheDelete(e.ctx, "drive.example.org"))
	if _, err := e.s.ACMECacheGet(e.ctx, "drive.example.org"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("deleted entry: %v, want NotFound", err)
	}
	if got, _ := e.s.ACMECacheGet(e.ctx, "acme_account+key"); string(got) != "account" {
		t.Fatalf("the other entry: %q, want it kept", got)
	}
}
