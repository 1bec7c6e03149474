package dedup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/dedup"
	"netdisk/dedup/storetest"
)

func TestDiskStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dedup.BlobStore {
		s, err := dedup.NewDiskStore(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestPinsBlockDeletion(t *testing.T) {
	p := dedup.NewPins()
	k := dedup.Key("aa")
	ctx := context.Background()
	p.Pin(ctx, k)
	ran, _ := p.IfUnpinned(ctx, k, func() error { return nil })
	if ran {
		t.Fatal("IfUnpinned ran on a pinned key")
	}
	p.Pin(ctx, k)
	p.Unpin(ctx, k)
	if ran, _ := p.IfUnpinned(ctx, k, func() error { return nil }); ran {
		t.Fatal("one pin is still held")
	}
	p.Unpin(ctx, k)
	if ran, _ := p.IfUnpinned(ctx, k, func() error { return nil }); !ran {
		t.Fatal("IfUnpinned did not run on an unpinned key")
	}
}

// TestDiskStorePutPaths covers what the store remembers between Puts: the
// same content stored by racing writers, and a fan-out directory removed
// behind its back after it was cached.
func TestDiskStorePutPaths(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := dedup.NewDiskStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	blob := func(i int) ([]byte, dedup.Key) {
		b := []byte(fmt.Sprintf("blob %d", i))
		sum := sha256.Sum256(b)
		return b, dedup.Key(hex.EncodeToString(sum[:]))
	}
	check := func(k dedup.Key, want []byte) {
		t.Helper()
		f, err := s.Open(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		got, _ := io.ReadAll(f)
		if !bytes.Equal(got, want) {
			t.Fatalf("blob %s holds %q, want %q", k, got, want)
		}
	}

	b, k := blob(1)
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() { defer wg.Done(); errc <- s.Put(ctx, k, b) }()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatalf("racing Put: %v", err)
		}
	}
	check(k, b)

	// Remove the blob's fan-out directory; a later Put into it must recreate it.
	if err := os.RemoveAll(filepath.Join(dir, string(k[:2]))); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, k, b); err != nil {
		t.Fatalf("Put after its directory was removed: %v", err)
	}
	check(k, b)

	// Successful Puts leave nothing in tmp/ but the empty spare made ahead
	// for the next one.
	for i := range 20 {
		b, k := blob(100 + i)
		if err := s.Put(ctx, k, b); err != nil {
			t.Fatal(err)
		}
		check(k, b)
	}
	tmp := filepath.Join(dir, "tmp")
	left := waitSpare(t, tmp)
	for _, e := range left {
		fi, _ := e.Info()
		if !strings.HasPrefix(e.Name(), "spare-") || fi.Size() != 0 {
			t.Fatalf("tmp/ holds %s (%d bytes) after successful Puts", e.Name(), fi.Size())
		}
	}

	// The spare removed behind the store's back (a new opener's cleanup of
	// stale temp files): the next Put still succeeds.
	for _, e := range left {
		os.Remove(filepath.Join(tmp, e.Name()))
	}
	b, k = blob(200)
	if err := s.Put(ctx, k, b); err != nil {
		t.Fatalf("Put after its spare was removed: %v", err)
	}
	check(k, b)
}

// waitSpare waits (with a deadline) until the spare made in the background
// exists, and returns tmp/'s entries.
func waitSpare(t *testing.T, tmp string) []os.DirEntry {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ents, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) > 0 || time.Now().After(deadline) {
			if len(ents) != 1 {
				t.Fatalf("tmp/ holds %d files, want the one spare", len(ents))
			}
			return ents
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDiskStoreRemovesStaleTemps: opening a store removes temp files a crash
// left long ago, and keeps recent ones (a Put of another opener in flight).
func TestDiskStoreRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	if _, err := dedup.NewDiskStore(dir); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	old, recent := filepath.Join(tmp, "spare-old"), filepath.Join(tmp, "put-recent")
	for _, p := range []string{old, recent} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	if _, err := dedup.NewDiskStore(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("stale temp file kept: %v", err)
	}
	if _, err := os.Stat(recent); err != nil {
		t.Fatalf("recent temp file removed: %v", err)
	}
}
