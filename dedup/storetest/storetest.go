// Package storetest is the conformance suite every dedup.BlobStore runs, so a
// new backend (S3-compatible storage) is held to the same contract as the
// local disk.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"sort"
	"sync"
	"testing"

	"netdisk/dedup"
)

func key(b []byte) dedup.Key {
	s := sha256.Sum256(b)
	return dedup.Key(hex.EncodeToString(s[:]))
}

// Run exercises a fresh, empty store.
func Run(t *testing.T, newStore func(t *testing.T) dedup.BlobStore) {
	ctx := context.Background()
	t.Run("PutOpenHasDelete", func(t *testing.T) {
		s := newStore(t)
		b := []byte("hello chunk")
		k := key(b)
		if ok, err := s.Has(ctx, k); err != nil || ok {
			t.Fatalf("Has before Put = %v, %v", ok, err)
		}
		if err := s.Put(ctx, k, b); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, k, b); err != nil {
			t.Fatalf("second Put must be idempotent: %v", err)
		}
		r, err := s.Open(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if string(got) != string(b) {
			t.Fatalf("read %q", got)
		}
		if ok, _ := s.Has(ctx, k); !ok {
			t.Fatal("Has after Put = false")
		}
		if err := s.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, k); err != nil {
			t.Fatalf("deleting a missing blob must succeed: %v", err)
		}
		if _, err := s.Open(ctx, k); !errors.Is(err, dedup.ErrNotFound) {
			t.Fatalf("Open after Delete: %v, want ErrNotFound", err)
		}
	})
	t.Run("InvalidKeyRefused", func(t *testing.T) {
		s := newStore(t)
		for _, k := range []dedup.Key{"", "../../etc/passwd", dedup.Key("ZZ" + string(key(nil))[2:])} {
			if err := s.Put(ctx, k, nil); err == nil {
				t.Errorf("Put(%q) accepted an invalid key", k)
			}
		}
	})
	t.Run("WalkAndConcurrentPuts", func(t *testing.T) {
		s := newStore(t)
		var want []string
		var wg sync.WaitGroup
		for i := range 20 {
			b := []byte{byte(i), 1, 2, 3}
			k := key(b)
			want = append(want, string(k))
			for range 3 { // the same blob from three writers at once
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := s.Put(ctx, k, b); err != nil {
						t.Error(err)
					}
				}()
			}
		}
		wg.Wait()
		var got []string
		if err := s.Walk(ctx, func(k dedup.Key) error { got = append(got, string(k)); return nil }); err != nil {
			t.Fatal(err)
		}
		sort.Strings(got)
		sort.Strings(want)
		if len(got) != len(want) {
			t.Fatalf("Walk found %d blobs, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("Walk mismatch at %d", i)
			}
		}
	})
	// Optional upgrades, found as the drive finds them (through wrappers
	// that name what they wrap): a store that has one is held to its
	// contract too.
	t.Run("Prefetcher", func(t *testing.T) {
		s := newStore(t)
		p, ok := dedup.AsPrefetcher(s)
		if !ok {
			t.Skip("the store does not read ahead")
		}
		var keys []dedup.Key
		var blobs [][]byte
		for i := range 5 {
			b := []byte{byte(i), 'p', 'r', 'e'}
			k := key(b)
			if err := s.Put(ctx, k, b); err != nil {
				t.Fatal(err)
			}
			keys, blobs = append(keys, k), append(blobs, b)
		}
		missing := key([]byte("never stored"))
		// Read-ahead is a hint: empty, missing or repeated keys are harmless,
		// and every read still returns the blob's bytes (or ErrNotFound).
		p.Prefetch(nil)
		p.Prefetch(append(append([]dedup.Key{missing}, keys...), keys[0]))
		for i, k := range keys {
			r, err := s.Open(ctx, k)
			if err != nil {
				t.Fatalf("Open %d after Prefetch: %v", i, err)
			}
			got, err := io.ReadAll(r)
			r.Close()
			if err != nil || string(got) != string(blobs[i]) {
				t.Fatalf("blob %d after Prefetch: %q, %v", i, got, err)
			}
		}
		if _, err := s.Open(ctx, missing); !errors.Is(err, dedup.ErrNotFound) {
			t.Fatalf("Open of a prefetched missing blob: %v, want ErrNotFound", err)
		}
	})
}
