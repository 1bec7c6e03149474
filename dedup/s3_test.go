package dedup_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/dedup"
	"netdisk/dedup/storetest"
	"netdisk/errs"
	"netdisk/testutil"
)

// One S3 server serves the package's tests; each store gets its own bucket.
func TestMain(m *testing.M) { testutil.Main(m) }

func openS3(t *testing.T) *dedup.S3Store {
	s3 := testutil.SharedS3(t)
	url, _ := s3.NewBucket(t)
	s, err := dedup.OpenS3(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The S3 store passes the BlobStore conformance suite on a real S3 server,
// with AWS_CA_BUNDLE set as on this machine (the client must not read it).
func TestS3Store(t *testing.T) {
	t.Setenv("AWS_CA_BUNDLE", filepath.Join(t.TempDir(), "no-such-bundle.pem"))
	storetest.Run(t, func(t *testing.T) dedup.BlobStore { return openS3(t) })
}

// The read cache in front of S3 passes the same suite.
func TestS3CacheStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) dedup.BlobStore {
		c, err := dedup.NewCache(openS3(t), dedup.CacheConfig{Dir: t.TempDir(), Size: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
}

func sha(b []byte) dedup.Key {
	s := sha256.Sum256(b)
	return dedup.Key(hex.EncodeToString(s[:]))
}

// A cached chunk is served from the cache; a corrupted cache file (left by
// an earlier run) is detected, dropped and fetched again; nodes racing to
// put one chunk all succeed and the object holds its bytes.
func TestS3CacheVerifiesAndRaces(t *testing.T) {
	ctx := context.Background()
	remote := openS3(t)
	dir := t.TempDir()
	b := bytes.Repeat([]byte("chunk "), 1000)
	k := sha(b)
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errc <- remote.Put(ctx, k, b)
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		if err != nil {
			t.Fatalf("racing put: %v", err)
		}
	}
	// An earlier run left a corrupted copy in the cache directory.
	if err := os.WriteFile(filepath.Join(dir, string(k)), []byte("torn"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := dedup.NewCache(remote, dedup.CacheConfig{Dir: dir, Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var rwg sync.WaitGroup
	for range 4 {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			r, err := c.Open(ctx, k)
			if err != nil {
				t.Error(err)
				return
			}
			got, _ := io.ReadAll(r)
			r.Close()
			if !bytes.Equal(got, b) {
				t.Errorf("read %d bytes, not the chunk", len(got))
			}
		}()
	}
	rwg.Wait()
	got, err := os.ReadFile(filepath.Join(dir, string(k)))
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("cache file after the reads: %d bytes, %v; want the chunk", len(got), err)
	}
	// Deleting through the cache removes the object and the cached copy.
	if err := c.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if ok, _ := remote.Has(ctx, k); ok {
		t.Fatal("object still in the bucket after Delete")
	}
	if _, err := os.Stat(filepath.Join(dir, string(k))); !os.IsNotExist(err) {
		t.Fatalf("cached copy after Delete: %v", err)
	}
}

// openS3Cache opens a read cache of 1 MiB in a new folder, dir, over a new
// bucket, remote.
func openS3Cache(t *testing.T) (remote *dedup.S3Store, c *dedup.Cache, dir string) {
	t.Helper()
	remote, dir = openS3(t), t.TempDir()
	c, err := dedup.NewCache(remote, dedup.CacheConfig{Dir: dir, Size: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return remote, c, dir
}

// A reader announcing its chunks finds the next ones fetched ahead: once
// they are in the cache, they read even after the remote objects are gone.
func TestS3CacheReadAhead(t *testing.T) {
	ctx := context.Background()
	remote, c, dir := openS3Cache(t)
	var keys []dedup.Key
	for i := range 5 {
		b := bytes.Repeat([]byte{byte('a' + i)}, 10000)
		k := sha(b)
		if err := remote.Put(ctx, k, b); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	c.Prefetch(keys)
	r, err := c.Open(ctx, keys[0]) // starts keys[1..3]
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for _, k := range keys[1:4] {
		for {
			if _, err := os.Stat(filepath.Join(dir, string(k))); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("chunk %s not fetched ahead within 10s", k)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, k := range keys[1:4] {
		if err := remote.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys[1:4] {
		r, err := c.Open(ctx, k)
		if err != nil {
			t.Fatalf("chunk fetched ahead: %v", err)
		}
		r.Close()
	}
}

// A cache file replaced after the cache checked and served it is never
// served: every read checks what it sends, drops the planted file and reads
// the chunk from S3. The class: other bytes of the same size, a truncated
// file, a file planted by another process before its first read.
func TestS3CacheVerifiesEveryRead(t *testing.T) {
	ctx := context.Background()
	_, c, dir := openS3Cache(t)
	b := bytes.Repeat([]byte("verified chunk "), 1000)
	k := sha(b)
	if err := c.Put(ctx, k, b); err != nil {
		t.Fatal(err)
	}
	read := func(what string) {
		t.Helper()
		r, err := c.Open(ctx, k)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got, _ := io.ReadAll(r)
		r.Close()
		if !bytes.Equal(got, b) {
			t.Fatalf("%s: served %q…, not the chunk", what, got[:min(len(got), 16)])
		}
	}
	read("first read")
	for _, planted := range [][]byte{
		bytes.Repeat([]byte("X"), len(b)),
		b[:len(b)/2],
		append(bytes.Clone(b[:len(b)-1]), 'Z'),
	} {
		if err := os.WriteFile(filepath.Join(dir, string(k)), planted, 0o600); err != nil {
			t.Fatal(err)
		}
		before := c.Fetches()
		read("after the file was replaced")
		if c.Fetches() != before+1 {
			t.Fatalf("%d fetches from S3, want 1: the planted file was not dropped", c.Fetches()-before)
		}
		if got, err := os.ReadFile(filepath.Join(dir, string(k))); err != nil || !bytes.Equal(got, b) {
			t.Fatalf("cache file after the read: %v; want the chunk fetched again", err)
		}
	}
	read("cached again")
}

// An S3 server that is away makes every call of the store fail as
// errs.Unavailable (503: retry later), reads of an object opened before the
// outage included, never as an unclassified failure (500); once it is back,
// a missing object is ErrNotFound again.
func TestS3StoreOutageIsUnavailable(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t)
	url, _ := srv.NewBucket(t)
	s, err := dedup.OpenS3(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	held := bytes.Repeat([]byte("held "), 2000)
	if err := s.Put(ctx, sha(held), held); err != nil {
		t.Fatal(err)
	}
	open, err := s.Open(ctx, sha(held))
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	srv.Kill()
	fresh := []byte("sent during the outage")
	check := func(op string, err error) {
		t.Helper()
		if !errs.Is(err, errs.Unavailable) {
			t.Errorf("%s during the outage: %v (kind %v); want kind unavailable", op, err, errs.KindOf(err))
		}
		if msg := errs.Message(err); strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, srv.Endpoint) {
			t.Errorf("%s: message %q names the store's address", op, msg)
		}
	}
	check("Put", s.Put(ctx, sha(fresh), fresh))
	_, err = s.Has(ctx, sha(held))
	check("Has", err)
	_, err = s.Open(ctx, sha(held))
	check("Open", err)
	_, err = io.ReadAll(open)
	check("Read of an object opened before", err)
	check("Delete", s.Delete(ctx, sha(fresh)))
	check("Walk", s.Walk(ctx, func(dedup.Key) error { return nil }))

	srv.Restart(t)
	if _, err := s.Open(ctx, sha(fresh)); !errors.Is(err, dedup.ErrNotFound) {
		t.Fatalf("Open of a missing object after the outage: %v; want ErrNotFound", err)
	}
}
