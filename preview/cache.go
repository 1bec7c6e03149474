package preview

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"netdisk/internal/atomicfile"
)

// cache keeps made thumbnails (and refusals) on the node's disk, bounded in
// total size: past maxBytes the least recently used go until a tenth of the
// bound is free. Each entry is one file, written durably (temp file, fsync,
// rename, folder fsync: a crash never leaves a torn thumbnail to be served),
// holding its content type on the first line and then the bytes.
//
// Why the node's disk and not the chunk store: a thumbnail is derived and
// cheap to make again, so it needs neither the chunk store's reference
// counts and GC nor its replication; a bounded local folder is simpler and
// serves without a round trip to S3. Nodes sharing a store each keep their
// own (each makes a content's thumbnail once).
type cache struct {
	root     *os.Root
	maxBytes int64
	now      func() time.Time
	log      *slog.Logger

	mu      sync.Mutex
	entries map[string]entry // by name relative to root
	total   int64
}

type entry struct {
	size int64
	used time.Time
}

// refusedType marks an entry that records a refusal (its bytes the
// message): a damaged or oversized image is judged once, not at every
// request for it.
const refusedType = "refused"

func openCache(dir string, maxBytes int64, now func() time.Time, log *slog.Logger) (*cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	c := &cache{root: root, maxBytes: maxBytes, now: now, log: log, entries: map[string]entry{}}
	err = fs.WalkDir(root.FS(), ".", func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		if strings.HasPrefix(de.Name(), ".") {
			root.Remove(p) // a temporary file a crash left behind
			return nil
		}
		info, err := de.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		c.entries[p] = entry{size: info.Size(), used: info.ModTime()}
		c.total += info.Size()
		return nil
	})
	if err != nil {
		root.Close()
		return nil, err
	}
	c.mu.Lock()
	c.evictLocked()
	c.mu.Unlock()
	return c, nil
}

func (c *cache) close() error { return c.root.Close() }

// name is an entry's file: two hex characters of fan-out keep folders small.
func name(key string) string { return path.Join(key[:2], key) }

// get returns an entry's content type and bytes; ok is false when absent.
func (c *cache) get(key string) (ctype string, data []byte, ok bool) {
	n := name(key)
	b, err := c.root.ReadFile(n)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn("thumbnail cache", "err", err)
		}
		return "", nil, false
	}
	head, data, found := bytes.Cut(b, []byte("\n"))
	if !found {
		return "", nil, false
	}
	now := c.now()
	c.mu.Lock()
	e, known := c.entries[n]
	if known {
		stale := now.Sub(e.used) > time.Hour
		e.used = now
		c.entries[n] = e
		if stale {
			// Keep the order of use across restarts, at most hourly
			// per entry: the file's time is what openCache reads.
			c.root.Chtimes(n, now, now)
		}
	}
	c.mu.Unlock()
	return string(head), data, true
}

// put stores an entry; a failure is logged, not returned: the thumbnail was
// made and is served anyway, and will be made again next time.
func (c *cache) put(key, ctype string, data []byte) {
	n := name(key)
	err := atomicfile.WriteIn(c.root, n, 0o600, func(w io.Writer) error {
		if _, err := io.WriteString(w, ctype+"\n"); err != nil {
			return err
		}
		_, err := w.Write(data)
		return err
	})
	if err != nil {
		c.log.Warn("thumbnail cache", "err", err)
		return
	}
	size := int64(len(ctype) + 1 + len(data))
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[n]; ok {
		c.total -= old.size
	}
	c.entries[n] = entry{size: size, used: c.now()}
	c.total += size
	c.evictLocked()
}

// evictLocked removes the least recently used entries once the total is
// over the bound, down to nine tenths of it, so eviction runs once per many
// puts rather than at each.
func (c *cache) evictLocked() {
	if c.total <= c.maxBytes {
		return
	}
	names := make([]string, 0, len(c.entries))
	for n := range c.entries {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return c.entries[a].used.Compare(c.entries[b].used) })
	for _, n := range names {
		if c.total <= c.maxBytes*9/10 {
			break
		}
		if err := c.root.Remove(n); err != nil && !errors.Is(err, fs.ErrNotExist) {
			c.log.Warn("thumbnail cache", "err", err)
			continue
		}
		c.total -= c.entries[n].size
		delete(c.entries, n)
	}
}

// size is the bytes the cache holds.
func (c *cache) size() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}
