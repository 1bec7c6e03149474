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
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"netdisk/internal/cachefile"
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
// is verified against its name when fetched and on every read from the
// directory (the bytes served are the bytes hashed), so a torn, corrupted
// or replaced cache file is dropped and fetched again, never served. Writes, existence and
// deletion go to the remote store, which is the truth: the cache is never
// asked whether a chunk exists (another node's GC may have removed it).
//
// Concurrent misses for one chunk make one fetch. In a process, a
// singleflight collapses them. Several processes may share one directory
// (several `netdisk serve` on one host, containers sharing a cache volume):
// given a Puller (SetPuller: the daemon's pull lock of seed 003,
// lock.Manager.Pull), a miss takes the pull lock of the chunk; the holder
// fetches, verifies and renames the file into place, then unlocks with
// success, and the processes waiting for it wake, find the file and read it
// without fetching. A failed fetch passes the lock to the next waiter, which
// fetches in turn. Without a Puller, or when the lock service is out of
// reach, each process fetches for itself.
//
// Sharing is safe because the directory is the only shared state: files
// appear whole (temporary file, then rename), a file this process did not
// write counts as a hit (and is verified as every read is), a file another
// process removed counts as a miss, and each process's eviction re-reads the
// directory now and then, so --cache-size bounds the whole directory
// whatever process wrote its files (each evicts the least recently used
// chunks it knows of; another process's hits are known to it only by the
// file's modification time).
type Cache struct {
	remote BlobStore
	dir    string
	max    int64
	now    func() time.Time // orders chunks by last use, nothing else

	mu      sync.Mutex
	used    int64
	stored  int64 // bytes this process wrote since it last re-read the directory
	entries map[Key]*cacheEntry
	fetch   singleflight.Group
	puller  Puller
	fetched atomic.Int64 // chunks read from the remote store

	// Read-ahead (Prefetch): ahead maps a chunk to the ones a reader will
	// want after it; reading it starts fetching them in the background, at
	// most readAheadFetches at a time across the node.
	ahead    map[Key][]Key
	fetching map[Key]bool // background fetches under way
	fetches  chan struct{}

	// The fetches the cache runs beyond any one caller (read-ahead, and
	// the shared fetch a caller may leave) end with Close: stop cancels
	// them, bg waits for them, and closed (under mu) keeps new ones from
	// starting, so none outlives the lock service its Puller calls.
	stop    context.CancelFunc
	stopCtx context.Context
	bg      sync.WaitGroup
	closed  bool
}

// errCacheClosed answers a fetch asked of a closed cache.
var errCacheClosed = errors.New("dedup: read cache closed")

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
	size int64
	used int64 // time of the last read (ns), for least-recently-used eviction
}

// Puller runs a chunk's fetch once among the processes sharing the cache
// directory (the daemon gives a lock.Puller: the chunk's pull lock): it
// calls fetch unless have reports the chunk (named by its SHA-256) in the
// directory, waiting while another process fetches it; a fetch that fails
// hands the turn to a waiter. Its wait ends with ctx. It must not fail
// because the lock service does: then it calls fetch uncoordinated.
type Puller interface {
	Pull(ctx context.Context, sha256 string, have func() bool, fetch func(context.Context) error) error
}

// pullTimeout bounds one shared fetch (the lock wait and the transfer): the
// callers waiting for it each give up with their own context sooner.
const pullTimeout = 5 * time.Minute

// rescanShare: a process re-reads the shared directory whenever it has
// written this share of the bound since it last did, so the files other
// processes write count against the bound within a sixteenth of it each.
const rescanShare = 16

var _ BlobStore = (*Cache)(nil)

// NewCache opens the cache directory, indexing the chunks an earlier run
// (or another process sharing it) left there and removing temporary files
// too old to be a fetch under way.
func NewCache(remote BlobStore, cc CacheConfig) (*Cache, error) {
	c := &Cache{remote: remote, dir: cc.Dir, max: cc.Size, now: time.Now, entries: map[Key]*cacheEntry{},
		ahead: map[Key][]Key{}, fetching: map[Key]bool{}, fetches: make(chan struct{}, readAheadFetches)}
	c.stopCtx, c.stop = context.WithCancel(context.Background())
	if c.max <= 0 {
		c.max = DefaultCacheSize
	}
	if err := c.rescan(true); err != nil {
		return nil, err
	}
	c.evict()
	return c, nil
}

// SetPuller makes misses take the pull lock p gives (see Cache); call it
// before the cache serves reads.
func (c *Cache) SetPuller(p Puller) {
	c.mu.Lock()
	c.puller = p
	c.mu.Unlock()
}

// rescan re-reads the directory: files other processes wrote join the index
// (their modification time as their last use), files they removed leave it.
// At start it also removes stale temporary files.
func (c *Cache) rescan(start bool) error {
	des, err := os.ReadDir(c.dir)
	if err != nil {
		return fmt.Errorf("cache dir: %w", err)
	}
	now := c.now()
	seen := make(map[Key]os.FileInfo, len(des))
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			continue // removed meanwhile
		}
		k := Key(de.Name())
		if k.Valid() {
			seen[k] = fi
		} else if start && strings.HasSuffix(de.Name(), ".tmp") && now.Sub(fi.ModTime()) > staleTemp {
			// Younger ones may be another process's fetch under way (disk.go's
			// staleTemp: a fetch takes seconds).
			os.Remove(filepath.Join(c.dir, de.Name()))
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if _, ok := seen[k]; !ok {
			c.used -= e.size
			delete(c.entries, k)
		}
	}
	for k, fi := range seen {
		if _, ok := c.entries[k]; !ok {
			c.entries[k] = &cacheEntry{size: fi.Size(), used: fi.ModTime().UnixNano()}
			c.used += fi.Size()
		}
	}
	c.stored = 0
	return nil
}

// adopt indexes a chunk file another process put in the directory (it is
// verified when read); false when there is none.
func (c *Cache) adopt(key Key) bool {
	fi, err := os.Stat(c.path(key))
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	c.mu.Lock()
	if _, ok := c.entries[key]; !ok {
		c.entries[key] = &cacheEntry{size: fi.Size(), used: c.now().UnixNano()}
		c.used += fi.Size()
	}
	c.mu.Unlock()
	return true
}

// present reports whether the chunk's file is in the directory, whoever put
// it there: the Puller's re-check after another process's fetch.
func (c *Cache) present(key Key) bool {
	if _, err := os.Stat(c.path(key)); err != nil {
		c.unindex(key)
		return false
	}
	return c.adopt(key)
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
	if b := c.hit(key); b != nil {
		return nopCloser{bytes.NewReader(b)}, nil
	}
	v, err := c.get(ctx, key)
	if err != nil {
		return nil, err
	}
	if v == nil {
		v = c.hit(key) // fetched into the directory by another process
	}
	if v == nil {
		// Another process fetched it, and it is gone again already
		// (evicted by a process short of room, or torn): fetch it here.
		if v, err = c.fetchRemote(ctx, key); err != nil {
			return nil, err
		}
	}
	// The bytes fetched were checked against the name: serve them.
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
		if c.closed {
			c.mu.Unlock()
			return
		}
		_, cached := c.entries[k]
		busy := cached || c.fetching[k]
		if !busy {
			select {
			case c.fetches <- struct{}{}:
				c.fetching[k] = true
				c.bg.Add(1)
			default:
				busy = true // all background fetches taken: the read fetches it
			}
		}
		c.mu.Unlock()
		if busy {
			continue
		}
		go func() {
			defer c.bg.Done()
			defer func() {
				c.mu.Lock()
				delete(c.fetching, k)
				c.mu.Unlock()
				<-c.fetches
			}()
			ctx, cancel := context.WithTimeout(c.stopCtx, time.Minute)
			defer cancel()
			c.get(ctx, k) // an error is met again, and reported, by the read itself
		}()
	}
}

// get fetches a chunk into the cache, once however many ask at a time (in
// this process by the singleflight, across processes by the Puller), and
// returns its bytes, or nil when another process fetched it into the
// directory. Each caller waits until its own ctx ends; the shared fetch
// goes on for the others.
func (c *Cache) get(ctx context.Context, key Key) ([]byte, error) {
	ch := c.fetch.DoChan(string(key), func() (any, error) {
		// The fetch serves every waiter: it must not die with the first
		// caller's request, only with the cache.
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return nil, errCacheClosed
		}
		c.bg.Add(1)
		p := c.puller
		c.mu.Unlock()
		defer c.bg.Done()
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pullTimeout)
		defer cancel()
		defer context.AfterFunc(c.stopCtx, cancel)()
		if p == nil {
			return c.fetchRemote(fctx, key)
		}
		var b []byte
		err := p.Pull(fctx, string(key), func() bool { return c.present(key) }, func(ctx context.Context) error {
			var err error
			b, err = c.fetchRemote(ctx, key)
			return err
		})
		return b, err
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.([]byte), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close cancels the fetches the cache runs in the background and waits for
// them; reads that miss fail after it. Close it before the lock service its
// Puller uses. The cached files stay for the next run.
func (c *Cache) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.stop()
	c.bg.Wait()
	return nil
}

// Fetches is how many chunk reads the cache sent the remote store (a metric:
// with a shared directory, the nodes' sum is the bucket's GETs).
func (c *Cache) Fetches() int64 { return c.fetched.Load() }

// fetchRemote reads a chunk from the remote store, verifies it and caches it.
func (c *Cache) fetchRemote(ctx context.Context, key Key) ([]byte, error) {
	c.fetched.Add(1)
	r, err := c.remote.Open(ctx, key)
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
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

// hit reads a cached chunk and checks its SHA-256 against its name on
// every read, serving the bytes it checked; nil on a miss (or a file that
// failed the check, now removed, so the read goes to the remote store). A
// file checked once is not trusted after: the directory is on a disk other
// processes, containers or people write to, and a file replaced after a
// check would otherwise be served as the chunk. Hashing what is sent costs
// what the mount's chunk cache pays for the same guarantee.
func (c *Cache) hit(key Key) []byte {
	f, err := os.Open(c.path(key))
	if err != nil {
		c.unindex(key) // never there, or removed by another process
		return nil
	}
	defer f.Close()
	c.adopt(key) // a file another process wrote is a hit too
	c.mu.Lock()
	e := c.entries[key]
	if e != nil {
		e.used = c.now().UnixNano()
	}
	c.mu.Unlock()
	if e == nil { // evicted between the two
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxCachedBlob+1))
	if err != nil {
		return nil
	}
	if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != string(key) {
		c.forget(key)
		return nil
	}
	return b
}

// store writes a verified chunk into the cache (temp file, then rename: a
// reader, in this process or another, never sees half a chunk). Failing to
// cache is not an error.
func (c *Cache) store(key Key, b []byte) {
	if int64(len(b)) > c.max || c.adopt(key) { // there already (maybe put by another process)
		return
	}
	tmp, err := os.CreateTemp(c.dir, "*.tmp")
	if err != nil {
		return
	}
	if _, err := cachefile.Publish(tmp, b, c.path(key)); err != nil {
		return
	}
	c.mu.Lock()
	if _, ok := c.entries[key]; !ok {
		c.entries[key] = &cacheEntry{size: int64(len(b)), used: c.now().UnixNano()}
		c.used += int64(len(b))
	}
	c.stored += int64(len(b))
	rescan := c.stored >= c.max/rescanShare
	c.mu.Unlock()
	if rescan {
		c.rescan(false) // a directory that cannot be read: keep the index as it is
	}
	c.evict()
}

// unindex drops a chunk from the index, leaving the directory alone.
func (c *Cache) unindex(key Key) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.used -= e.size
		delete(c.entries, key)
	}
	c.mu.Unlock()
}

// forget drops a cached chunk, from the index and the directory.
func (c *Cache) forget(key Key) {
	c.unindex(key)
	os.Remove(c.path(key))
}

// evict removes the least recently read chunks until the cache is within
// nine tenths of its bound (evicting in batches, not one file per store).
// A chunk another process removed first is simply gone.
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
