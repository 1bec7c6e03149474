package mount

import (
	"container/list"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"

	"netdisk/internal/cachefile"
)

// ChunkCache is a content-addressed chunk cache, keyed by the chunk's
// SHA-256 (never by its MD5: two different chunks may share an MD5, and a
// cache keyed by it would serve one file's bytes for the other). A chunk
// fetched for one file serves every file that holds it, and the folder may
// be shared by several mounts.
//
// Nothing is served that was not checked against its key: fetched bytes are
// hashed before anyone reads them, and a file found on disk is hashed in
// full the first time this process sees it (as a file identity: device,
// inode, size, mtime — a file replaced by another mount or process is seen
// as new and hashed again). A file that fails is removed and the chunk
// fetched again. Files are written to a temporary name and renamed (readers
// in other mounts never see a partial file) and never fsynced (it is a
// cache); a chunk of whole blocks is written with O_DIRECT (writeDirect).
//
// Recently used chunks are also kept in memory (memMax bytes): a reader
// going through a chunk in kernel-sized reads is served from there even
// when the disk copy cannot be written or was deleted (a cleaned cache
// folder is recreated, and logged, on the next write). Least recently used
// files are evicted beyond max bytes.
type ChunkCache struct {
	dir    string
	max    int64
	memMax int64

	mu    sync.Mutex
	lru   *list.List               // on disk, front = most recent; values are *diskItem
	items map[string]*list.Element // by key
	size  int64
	mem   *list.List // in memory, front = most recent; values are *memItem
	mems  map[string]*list.Element
	memSz int64

	dirMu sync.Mutex // one recreation of a removed folder at a time
	// Files being written. Not a WaitGroup: Wait may run while reads
	// start new writes (a WaitGroup forbids Add then).
	wmu       sync.Mutex
	wdone     *sync.Cond
	writing   int
	writingSz int64

	// Logger, when set before use, gets the cache's warnings instead of
	// slog.Default().
	Logger *slog.Logger
}

func (c *ChunkCache) log() *slog.Logger {
	if c.Logger != nil {
		return c.Logger
	}
	return slog.Default()
}

type diskItem struct {
	key   string
	size  int64
	ident fileIdent // of the file known to hash to key; zero: not checked yet
}

type memItem struct {
	key  string
	data []byte // checked against key
}

// fileIdent tells whether the file at a path is still the one checked.
type fileIdent struct {
	dev, ino   uint64
	size, mtim int64
}

func identOf(info fs.FileInfo) fileIdent {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileIdent{}
	}
	return fileIdent{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtim: info.ModTime().UnixNano()}
}

// memDefault bounds the chunks kept in memory: the chunk being read and
// those prefetched after it, for a few readers at once.
const memDefault = 64 << 20

// Key names the chunk in the cache. With its SHA-256 known (always, from a
// current server) the key is that hash and the chunk is shared between
// files and stored on disk. Without (an older server), the chunk is only
// known by its MD5, which does not identify content: it is then kept in
// memory only, for the one file version (path and hash) it was read from.
func (c ChunkRef) Key(path, fileHash string) string {
	if validSHA256(c.SHA256) {
		return c.SHA256
	}
	return "md5:" + c.MD5 + ":" + strconv.FormatInt(c.Offset, 10) + ":" + fileHash + ":" + path
}

func validSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// OpenChunkCache opens (and indexes) the cache in dir; max <= 0 means 1 GiB.
// Chunks left by an earlier run are kept, oldest first in line for eviction,
// and checked when first read.
func OpenChunkCache(dir string, max int64) (*ChunkCache, error) {
	if max <= 0 {
		max = 1 << 30
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	c := &ChunkCache{dir: dir, max: max, memMax: min(int64(memDefault), max/4),
		lru: list.New(), items: map[string]*list.Element{}, mem: list.New(), mems: map[string]*list.Element{}}
	c.wdone = sync.NewCond(&c.wmu)
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
		info, err := de.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if !validSHA256(name) {
			// Temporary files of a crashed run, and files of older versions
			// keyed by MD5, which are never read again.
			os.Remove(filepath.Join(dir, name))
			continue
		}
		olds = append(olds, old{name, info.Size(), info.ModTime().UnixNano()})
	}
	sort.Slice(olds, func(i, j int) bool { return olds[i].at > olds[j].at })
	for _, o := range olds {
		c.items[o.key] = c.lru.PushBack(&diskItem{key: o.key, size: o.size})
		c.size += o.size
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return c, nil
}

func (c *ChunkCache) path(key string) string { return filepath.Join(c.dir, key) }

// ReadAt copies the bytes at off of chunk key (of ref's size) into dest and
// reports whether the chunk was cached. Only checked bytes are served.
func (c *ChunkCache) ReadAt(ref ChunkRef, key string, dest []byte, off int64) (int, bool) {
	if off < 0 || off > ref.Size {
		return 0, false
	}
	c.mu.Lock()
	if el, ok := c.mems[key]; ok {
		c.mem.MoveToFront(el)
		n := copy(dest, el.Value.(*memItem).data[off:])
		c.mu.Unlock()
		return n, true
	}
	var known fileIdent
	el, indexed := c.items[key]
	if indexed {
		c.lru.MoveToFront(el)
		known = el.Value.(*diskItem).ident
	}
	c.mu.Unlock()
	if !validSHA256(key) {
		return 0, false
	}
	// Not indexed may still be on disk: another mount sharing the folder
	// wrote it.
	f, err := os.Open(c.path(key))
	if err != nil {
		if indexed {
			c.forget(key)
		}
		return 0, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return 0, false
	}
	id := identOf(info)
	if id == (fileIdent{}) || id != known {
		// Not checked by this process (left by an earlier run, written by
		// another mount, or replaced since): hash it whole before use.
		data := make([]byte, ref.Size)
		n, rerr := f.ReadAt(data, 0)
		if info.Size() != ref.Size || int64(n) != ref.Size || (rerr != nil && int64(n) < ref.Size) || CheckChunk(ref, key, data) != nil {
			c.log().Warn("chunk cache: discarding a damaged file", "chunk", key)
			os.Remove(c.path(key))
			c.forget(key)
			return 0, false
		}
		c.mu.Lock()
		c.indexLocked(key, ref.Size, id)
		c.memPutLocked(key, data)
		c.mu.Unlock()
		return copy(dest, data[off:]), true
	}
	want := min(int64(len(dest)), ref.Size-off)
	n, err := f.ReadAt(dest[:want], off)
	if int64(n) < want {
		c.forget(key)
		return 0, false
	}
	return n, true
}

// Has reports whether the chunk is cached in memory or indexed on disk.
func (c *ChunkCache) Has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, inMem := c.mems[key]
	_, onDisk := c.items[key]
	return inMem || onDisk
}

// Put stores a chunk's bytes, which must have passed CheckChunk for key and
// must not be changed afterwards. They serve reads at once from memory; the
// file is written in the background, off the reader's path. A failed write
// only leaves the chunk in memory.
func (c *ChunkCache) Put(ref ChunkRef, key string, data []byte) error {
	if int64(len(data)) != ref.Size {
		return fmt.Errorf("chunk %s: got %d bytes, want %d", key, len(data), ref.Size)
	}
	c.mu.Lock()
	c.memPutLocked(key, data)
	_, onDisk := c.items[key]
	c.mu.Unlock()
	if onDisk || !validSHA256(key) {
		return nil
	}
	c.wmu.Lock()
	c.writing++
	c.writingSz += ref.Size
	c.wmu.Unlock()
	go func() {
		defer func() {
			c.wmu.Lock()
			c.writingSz -= ref.Size
			if c.writing--; c.writing == 0 {
				c.wdone.Broadcast()
			}
			c.wmu.Unlock()
		}()
		id, err := c.writeFile(key, data)
		if err != nil {
			c.log().Debug("chunk cache: write failed, chunk kept in memory only", "chunk", key, "err", err)
			return
		}
		c.mu.Lock()
		c.indexLocked(key, ref.Size, id)
		c.mu.Unlock()
	}()
	return nil
}

// CheckChunk verifies that data is the chunk ref names under key: its
// SHA-256 when the key is one, else (an older server) its MD5.
func CheckChunk(ref ChunkRef, key string, data []byte) error {
	if int64(len(data)) != ref.Size {
		return fmt.Errorf("chunk %s: got %d bytes, want %d", key, len(data), ref.Size)
	}
	if validSHA256(key) {
		if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != key {
			return fmt.Errorf("chunk %s: received bytes have another SHA-256", key)
		}
		return nil
	}
	if sum := md5.Sum(data); hex.EncodeToString(sum[:]) != ref.MD5 {
		return fmt.Errorf("chunk %s: received bytes have another MD5", ref.MD5)
	}
	return nil
}

// writeFile writes data under key by temporary file and rename, recreating
// the folder once if it was removed, and returns the identity of the file.
func (c *ChunkCache) writeFile(key string, data []byte) (fileIdent, error) {
	tmp, err := os.CreateTemp(c.dir, ".tmp")
	if errors.Is(err, fs.ErrNotExist) {
		c.recreateDir()
		tmp, err = os.CreateTemp(c.dir, ".tmp")
	}
	if err != nil {
		return fileIdent{}, err
	}
	rest := data
	if writeDirect(tmp, data) {
		rest = nil
	}
	info, err := cachefile.Publish(tmp, rest, c.path(key))
	if err != nil {
		return fileIdent{}, err
	}
	return identOf(info), nil
}

// recreateDir makes the cache folder again after something removed it (a
// tmp cleaner, a user freeing space): without it every chunk would be
// fetched anew for the life of the mount. The index is emptied, as the
// files went with the folder.
func (c *ChunkCache) recreateDir() {
	c.dirMu.Lock()
	defer c.dirMu.Unlock()
	if _, err := os.Stat(c.dir); !errors.Is(err, fs.ErrNotExist) {
		return // another writer recreated it already
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		c.log().Warn("chunk cache: folder removed and cannot be recreated; chunks are kept in memory only", "dir", c.dir, "err", err)
		return
	}
	c.log().Warn("chunk cache: folder was removed while mounted; recreated", "dir", c.dir)
	c.mu.Lock()
	c.lru.Init()
	clear(c.items)
	c.size = 0
	c.mu.Unlock()
}

// Wait waits for the files being written (tests, shutdown).
func (c *ChunkCache) Wait() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	for c.writing > 0 {
		c.wdone.Wait()
	}
}

// indexLocked records that the file for key, checked, has identity id.
func (c *ChunkCache) indexLocked(key string, size int64, id fileIdent) {
	if el, ok := c.items[key]; ok {
		el.Value.(*diskItem).ident = id
		c.lru.MoveToFront(el)
		return
	}
	c.items[key] = c.lru.PushFront(&diskItem{key: key, size: size, ident: id})
	c.size += size
	c.evictLocked()
}

// forget drops key from the disk index (its file is gone or unusable).
func (c *ChunkCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.lru.Remove(el)
		delete(c.items, key)
		c.size -= el.Value.(*diskItem).size
	}
}

func (c *ChunkCache) memPutLocked(key string, data []byte) {
	if el, ok := c.mems[key]; ok {
		c.mem.MoveToFront(el)
		return
	}
	c.mems[key] = c.mem.PushFront(&memItem{key: key, data: data})
	c.memSz += int64(len(data))
	// Always keep the newest: a chunk larger than the bound must still serve.
	for c.memSz > c.memMax && c.mem.Len() > 1 {
		it := c.mem.Remove(c.mem.Back()).(*memItem)
		delete(c.mems, it.key)
		c.memSz -= int64(len(it.data))
	}
}

// evictLocked removes least recently used files beyond max, always keeping
// the newest one (a chunk larger than the cache must still serve).
func (c *ChunkCache) evictLocked() {
	for c.size > c.max && c.lru.Len() > 1 {
		it := c.lru.Remove(c.lru.Back()).(*diskItem)
		delete(c.items, it.key)
		c.size -= it.size
		os.Remove(c.path(it.key))
	}
}

// Size returns the bytes held on disk, and being written there.
func (c *ChunkCache) Size() int64 {
	c.wmu.Lock()
	w := c.writingSz
	c.wmu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size + w
}

// createTempIn is os.CreateTemp that recreates dir, once and logged, when
// something removed it while mounted (the staging folder sits in the cache
// folder, which cleaners and users empty).
func createTempIn(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	slog.Warn("folder was removed while mounted; recreated", "dir", dir)
	return os.CreateTemp(dir, pattern)
}
