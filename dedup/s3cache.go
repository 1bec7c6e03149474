package dedup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// CacheConfig bounds a node's local read cache of a remote store's chunks.
type CacheConfig struct {
	Dir  string // where cached chunks live, one file per SHA-256
	Size int64  // bytes kept at most; 0 means DefaultCacheSize
}

// DefaultCacheSize is the read cache's bound when none is given.
const DefaultCacheSize = 1 << 30

// maxCachedBlob bounds what one fetch reads into memory: chunks are at most
// 64 MiB (--chunk-size); a larger object is not one of ours.
const maxCachedBlob = 64 << 20

// Cache is a BlobStore in front of a remote one (S3): reads are served from
// a local directory of chunks keyed by SHA-256, filled on a miss. A chunk
// is verified against its name when fetched and the first time this
// process reads a file left by an earlier run, so a torn or corrupted cache
// file is dropped and fetched again, never served. Concurrent misses for one
// chunk make one fetch. Writes, existence and deletion go to the remote
// store, which is the truth: the cache is never asked whether a chunk
// exists (another node's GC may have removed it).
type Cache struct {
	remote BlobStore
	dir    string
	max    int64

	mu      sync.Mutex
	used    int64
	tick    uint64
	entries map[Key]*cacheEntry
	fetch   singleflight.Group

	// Read-ahead (Prefetch): ahead maps a chunk to the ones a reader will
	// want after it; reading it starts fetching them in the background, at
	// most readAheadFetches at a time across the node.
	ahead    map[Key][]Key
	fetching map[Key]bool // background fetches under way
	fetches  chan struct{}
}

// Prefetcher is a BlobStore that can fetch blobs ahead of their reads: a
// reader about to read keys in order says so, and the store keeps a few of
// them on their way.
type Prefetcher interface {
	Prefetch(keys []Key)
}

var _ Prefetcher = (*Cache)(nil)

const (
	readAhead        = 3   // chunks fetched ahead of a sequential reader
	readAheadFetches = 4   // background fetches at once, per node
	maxAheadTracked  = 1e5 // read-ahead entries kept before forgetting them all
)

type cacheEntry struct {
	size     int64
	used     uint64 // tick of the last read, for least-recently-used eviction
	verified bool
}

var _ BlobStore = (*Cache)(nil)

// NewCache opens the cache directory, indexing the chunks an earlier run
// left there and removing unfinished temporary files.
func NewCache(remote BlobStore, cc CacheConfig) (*Cache, error) {
	c := &Cache{remote: remote, dir: cc.Dir, max: cc.Size, entries: map[Key]*cacheEntry{},
		ahead: map[Key][]Key{}, fetching: map[Key]bool{}, fetches: make(chan struct{}, readAheadFetches)}
	if c.max <= 0 {
		c.max = DefaultCacheSize
	}
	des, err := os.ReadDir(cc.Dir)
	if err != nil {
		return nil, fmt.Errorf("cache dir: %w", err)
	}
	for _, de := range des {
		k := Key(de.Name())
		if !k.Valid() {
			if strings.HasSuffix(de.Name(), ".tmp") {
				os.Remove(filepath.Join(cc.Dir, de.Name()))
			}
			continue
		}
		if fi, err := de.Info(); err == nil {
			c.entries[k] = &cacheEntry{size: fi.Size()}
			c.used += fi.Size()
		}
	}
	c.evict()
	return c, nil
}

func (c *Cache) path(k Key) string { return filepath.Join(c.dir, string(k)) }

// Put stores the chunk remotely, then keeps a copy: a chunk just written is
// likely read soon (a GET after a PUT, a merge).
func (c *Cache) Put(ctx context.Context, key Key, b []byte) error {
	if err := c.remote.Put(ctx, key, b); err != nil {
		return err
	}
	c.store(key, b)
	return nil
}

// Open serves the chunk from the cache, fetching it on a miss.
func (c *Cache) Open(ctx context.Context, key Key) (io.ReadSeekCloser, error) {
	if !key.Valid() {
		return nil, fmt.Errorf("cache open: invalid key %q: %w", key, ErrNotFound)
	}
	c.readAhead(key)
	if f := c.hit(key); f != nil {
		return f, nil
	}
	v, err := c.get(ctx, key)
	if err != nil {
		return nil, err
	}
	if f := c.hit(key); f != nil {
		return f, nil
	}
	// Evicted already (a tiny cache): serve the fetched bytes.
	return nopCloser{bytes.NewReader(v)}, nil
}

// Prefetch notes that keys will be read in this order: reading one starts
// fetching the next few, and the first few start now. Bytes already cached
// cost nothing.
func (c *Cache) Prefetch(keys []Key) {
	if len(keys) < 2 {
		return
	}
	c.mu.Lock()
	if len(c.ahead) > maxAheadTracked {
		c.ahead = map[Key][]Key{} // readers that went away: forget them
	}
	for i, k := range keys[:len(keys)-1] {
		c.ahead[k] = keys[i+1 : min(i+1+readAhead, len(keys))]
	}
	c.mu.Unlock()
	c.startFetches(keys[:min(readAhead, len(keys))])
}

// readAhead starts fetching what a reader of key will want next.
func (c *Cache) readAhead(key Key) {
	c.mu.Lock()
	next, ok := c.ahead[key]
	delete(c.ahead, key)
	c.mu.Unlock()
	if ok {
		c.startFetches(next)
	}
}

// startFetches fetches the keys not cached in the background, skipping
// them when the node's background fetches are all busy (the read then
// fetches its chunk itself).
func (c *Cache) startFetches(keys []Key) {
	for _, k := range keys {
		if !k.Valid() {
			continue
		}
		c.mu.Lock()
		_, cached := c.entries[k]
		busy := cached || c.fetching[k]
		if !busy {
			select {
			case c.fetches <- struct{}{}:
				c.fetching[k] = true
			default:
				busy = true // all background fetches taken: the read fetches it
			}
		}
		c.mu.Unlock()
		if busy {
			continue
		}
		go func() {
			defer func() {
				c.mu.Lock()
				delete(c.fetching, k)
				c.mu.Unlock()
				<-c.fetches
			}()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c.get(ctx, k) // an error is met again, and reported, by the read itself
		}()
	}
}

// get fetches a chunk into the cache, once however many ask at a time, and
// returns its bytes.
func (c *Cache) get(ctx context.Context, key Key) ([]byte, error) {
	v, err, _ := c.fetch.Do(string(key), func() (any, error) {
		// The fetch serves every waiter: it must not die with the first
		// caller's request.
		r, err := c.remote.Open(context.WithoutCancel(ctx), key)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		b, err := io.ReadAll(io.LimitReader(r, maxCachedBlob+1))
		if err != nil {
			return nil, fmt.Errorf("cache fetch %s: %w", key, err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != string(key) {
			return nil, fmt.Errorf("cache fetch %s: the remote object's bytes do not match its name", key)
		}
		c.store(key, b)
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// hit opens a cached chunk, verifying it on its first read by this process;
// nil on a miss (or a file that failed verification, now removed).
func (c *Cache) hit(key Key) *os.File {
	c.mu.Lock()
	e := c.entries[key]
	if e != nil {
		c.tick++
		e.used = c.tick
	}
	verified := e != nil && e.verified
	c.mu.Unlock()
	if e == nil {
		return nil
	}
	f, err := os.Open(c.path(key))
	if err != nil {
		c.forget(key)
		return nil
	}
	if verified {
		return f
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil || hex.EncodeToString(h.Sum(nil)) != string(key) {
		f.Close()
		c.forget(key)
		return nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil
	}
	c.mu.Lock()
	e.verified = true
	c.mu.Unlock()
	return f
}

// store writes a verified chunk into the cache (temp file, then rename: a
// reader never sees half a chunk). Failing to cache is not an error.
func (c *Cache) store(key Key, b []byte) {
	c.mu.Lock()
	_, ok := c.entries[key]
	c.mu.Unlock()
	if ok || int64(len(b)) > c.max {
		return
	}
	tmp, err := os.CreateTemp(c.dir, "*.tmp")
	if err != nil {
		return
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.path(key))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return
	}
	c.mu.Lock()
	if _, ok := c.entries[key]; !ok {
		c.tick++
		c.entries[key] = &cacheEntry{size: int64(len(b)), used: c.tick, verified: true}
		c.used += int64(len(b))
	}
	c.mu.Unlock()
	c.evict()
}

// forget drops a cached chunk.
func (c *Cache) forget(key Key) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.used -= e.size
		delete(c.entries, key)
	}
	c.mu.Unlock()
	os.Remove(c.path(key))
}

// evict removes the least recently read chunks until the cache is within
// nine tenths of its bound (evicting in batches, not one file per store).
func (c *Cache) evict() {
	c.mu.Lock()
	if c.used <= c.max {
		c.mu.Unlock()
		return
	}
	type kv struct {
		k Key
		e *cacheEntry
	}
	all := make([]kv, 0, len(c.entries))
	for k, e := range c.entries {
		all = append(all, kv{k, e})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].e.used < all[j].e.used })
	var drop []Key
	for _, x := range all {
		if c.used <= c.max/10*9 {
			break
		}
		c.used -= x.e.size
		delete(c.entries, x.k)
		drop = append(drop, x.k)
	}
	c.mu.Unlock()
	for _, k := range drop {
		os.Remove(c.path(k)) // an open reader keeps its file until it closes
	}
}

// Has asks the remote store: only it knows whether a chunk still exists.
func (c *Cache) Has(ctx context.Context, key Key) (bool, error) { return c.remote.Has(ctx, key) }

// Delete removes the chunk remotely and from the cache.
func (c *Cache) Delete(ctx context.Context, key Key) error {
	err := c.remote.Delete(ctx, key)
	if err == nil || errors.Is(err, ErrNotFound) {
		c.forget(key)
	}
	return err
}

// Walk lists the remote store.
func (c *Cache) Walk(ctx context.Context, fn func(Key) error) error { return c.remote.Walk(ctx, fn) }
