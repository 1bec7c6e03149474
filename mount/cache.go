package mount

import (
	"container/list"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ChunkCache is a content-addressed chunk cache on local disk, keyed by
// chunk MD5 and size: a chunk fetched for one file serves every file that
// holds it. Only bytes whose MD5 was checked are stored. Files are written
// in the background and never fsynced (it is a cache): a chunk left by an
// earlier run is checked against its MD5 when first read, and dropped if a
// crash damaged it. Least recently used chunks are evicted beyond max bytes.
type ChunkCache struct {
	dir string
	max int64

	mu    sync.Mutex
	lru   *list.List               // front = most recent; values are *cacheItem
	items map[string]*list.Element // by key
	size  int64

	writes sync.WaitGroup
}

type cacheItem struct {
	key      string
	size     int64
	data     []byte // the bytes while they are checked and written
	verified bool   // MD5 checked by this process
	from     string // the file version whose Range read brought the bytes
}

func chunkKey(c ChunkRef) string { return c.MD5 + "-" + strconv.FormatInt(c.Size, 10) }

// OpenChunkCache opens (and indexes) the cache in dir; max <= 0 means 1 GiB.
// Chunks left by an earlier run are kept, oldest first in line for eviction.
func OpenChunkCache(dir string, max int64) (*ChunkCache, error) {
	if max <= 0 {
		max = 1 << 30
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &ChunkCache{dir: dir, max: max, lru: list.New(), items: map[string]*list.Element{}}
	des, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type old struct {
		key  string
		size int64
		at   int64
	}
	var olds []old
	for _, de := range des {
		name := de.Name()
		if strings.HasPrefix(name, ".tmp") {
			os.Remove(filepath.Join(dir, name))
			continue
		}
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		olds = append(olds, old{name, info.Size(), info.ModTime().UnixNano()})
	}
	sort.Slice(olds, func(i, j int) bool { return olds[i].at > olds[j].at })
	for _, o := range olds {
		c.items[o.key] = c.lru.PushBack(&cacheItem{key: o.key, size: o.size})
		c.size += o.size
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return c, nil
}

func (c *ChunkCache) path(key string) string { return filepath.Join(c.dir, key) }

// ReadAt copies the chunk's bytes at off into dest for a reader of file
// version fileHash and reports whether the chunk was cached.
func (c *ChunkCache) ReadAt(ref ChunkRef, fileHash string, dest []byte, off int64) (int, bool) {
	key := chunkKey(ref)
	c.mu.Lock()
	el, ok := c.items[key]
	var it *cacheItem
	if ok {
		it = el.Value.(*cacheItem)
		if it.data != nil && !it.verified && it.from != fileHash {
			// Still being checked, and brought for another file: those
			// bytes are only known right for the version that asked.
			c.mu.Unlock()
			return 0, false
		}
		c.lru.MoveToFront(el)
		if it.data != nil {
			n := copy(dest, it.data[min(off, int64(len(it.data))):])
			c.mu.Unlock()
			return n, true
		}
	}
	if !ok {
		c.mu.Unlock()
		return 0, false
	}
	verified := it.verified
	c.mu.Unlock()
	f, err := os.Open(c.path(key))
	if err != nil {
		c.drop(key)
		return 0, false
	}
	defer f.Close()
	if !verified {
		// Left by an earlier run, unsynced: check it once before trusting it.
		h := md5.New()
		if n, err := io.Copy(h, f); err != nil || n != ref.Size || hex.EncodeToString(h.Sum(nil)) != ref.MD5 {
			c.drop(key)
			return 0, false
		}
		c.mu.Lock()
		it.verified = true
		c.mu.Unlock()
	}
	n, err := f.ReadAt(dest, off)
	if err != nil && int64(n) < min(int64(len(dest)), ref.Size-off) {
		c.drop(key)
		return 0, false
	}
	return n, true
}

// Has reports whether the chunk is cached.
func (c *ChunkCache) Has(ref ChunkRef) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[chunkKey(ref)]
	return ok
}

// Put stores a chunk that a Range read of file version fileHash returned.
// The bytes serve that version's reads at once; their MD5 is checked and
// the file written in the background, off the reader's path (data must not
// be changed afterwards). A chunk that fails the check is dropped, and
// never served to another file.
func (c *ChunkCache) Put(ref ChunkRef, fileHash string, data []byte) error {
	if int64(len(data)) != ref.Size {
		return fmt.Errorf("chunk %s: got %d bytes, want %d", ref.MD5, len(data), ref.Size)
	}
	key := chunkKey(ref)
	c.mu.Lock()
	if _, ok := c.items[key]; ok {
		c.mu.Unlock()
		return nil
	}
	it := &cacheItem{key: key, size: ref.Size, data: data, from: fileHash}
	el := c.lru.PushFront(it)
	c.items[key] = el
	c.size += ref.Size
	c.evictLocked()
	c.mu.Unlock()
	c.writes.Add(1)
	go func() {
		defer c.writes.Done()
		err := CheckChunk(ref, data)
		if err == nil {
			c.mu.Lock()
			it.verified = true
			c.mu.Unlock()
			err = c.writeFile(key, data)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		it.data = nil
		if cur, ok := c.items[key]; !ok || cur != el {
			os.Remove(c.path(key)) // evicted meanwhile
			return
		}
		if err != nil {
			c.removeLocked(el)
		}
	}()
	return nil
}

// CheckChunk verifies that data is the chunk ref names.
func CheckChunk(ref ChunkRef, data []byte) error {
	if int64(len(data)) != ref.Size {
		return fmt.Errorf("chunk %s: got %d bytes, want %d", ref.MD5, len(data), ref.Size)
	}
	sum := md5.Sum(data)
	if hex.EncodeToString(sum[:]) != ref.MD5 {
		return fmt.Errorf("chunk %s: received bytes have another MD5", ref.MD5)
	}
	return nil
}

func (c *ChunkCache) writeFile(key string, data []byte) error {
	tmp, err := os.CreateTemp(c.dir, ".tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), c.path(key))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Wait waits for the files being written (tests, shutdown).
func (c *ChunkCache) Wait() { c.writes.Wait() }

func (c *ChunkCache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.removeLocked(el)
	}
}

func (c *ChunkCache) removeLocked(el *list.Element) {
	it := el.Value.(*cacheItem)
	c.lru.Remove(el)
	delete(c.items, it.key)
	c.size -= it.size
	os.Remove(c.path(it.key))
}

// evictLocked removes least recently used chunks beyond max, always
// keeping the newest one (a chunk larger than the cache must still serve).
func (c *ChunkCache) evictLocked() {
	for c.size > c.max && c.lru.Len() > 1 {
		c.removeLocked(c.lru.Back())
	}
}

// Size returns the bytes held.
func (c *ChunkCache) Size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
