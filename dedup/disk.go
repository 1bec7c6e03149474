package dedup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"netdisk/internal/atomicfile"
	"netdisk/internal/crashpoint"
)

// DiskStore keeps blobs as files under dir/ab/cd/<key>, two levels of fan-out
// so no directory grows past a few thousand entries at realistic sizes.
// Blobs are written to a temp file in dir/tmp, fsynced, renamed into place,
// and the directory is fsynced.
type DiskStore struct {
	dir, tmp string

	// known holds fan-out directories known to exist (blobs are deleted,
	// directories never are), so a Put does not stat or mkdir them each time.
	known sync.Map

	// spare is an empty temp file made ahead of the next Put, so the request
	// does not wait for an inode to be allocated: on a busy file system (ext4
	// without a journal scans recently freed inodes) that alone can cost more
	// than the fsync. A crash leaves at most one empty spare behind;
	// NewDiskStore removes stale ones.
	spare     chan *os.File
	refilling atomic.Bool
	// refill is the goroutine making the next spare, waited for by Close;
	// closed (under mu) keeps a new one from starting after it.
	mu     sync.Mutex
	refill sync.WaitGroup
	closed bool
}

var _ BlobStore = (*DiskStore)(nil)

// staleTemp is the age past which a file in tmp/ is a leftover of a crash (a
// Put takes seconds; a spare waiting that long is replaced, see Put).
const staleTemp = 24 * time.Hour

// NewDiskStore opens (creating if needed) a blob store rooted at dir, and
// removes temp files that crashes left behind.
func NewDiskStore(dir string) (*DiskStore, error) {
	tmp := filepath.Join(dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("dedup: create store: %w", err)
	}
	if ents, err := os.ReadDir(tmp); err == nil {
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && !fi.IsDir() && time.Since(fi.ModTime()) > staleTemp {
				os.Remove(filepath.Join(tmp, e.Name()))
			}
		}
	}
	return &DiskStore{dir: dir, tmp: tmp, spare: make(chan *os.File, 1)}, nil
}

func (s *DiskStore) path(key Key) (string, error) {
	if !key.Valid() {
		return "", fmt.Errorf("dedup: invalid key %q", key)
	}
	k := string(key)
	return filepath.Join(s.dir, k[:2], k[2:4], k), nil
}

// Put writes b to a temp file, fsyncs it, renames it into place and fsyncs the
// directory: after Put returns, a crash cannot lose or truncate the blob.
func (s *DiskStore) Put(ctx context.Context, key Key, b []byte) (err error) {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if _, err := os.Stat(p); err == nil {
		return nil // idempotent: content-addressed, so an existing blob is this blob
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = s.put(b, p, s.takeSpare())
	if errors.Is(err, fs.ErrNotExist) {
		// The fan-out directory or the spare was removed behind our back
		// (a spare idle past staleTemp, removed by a new opener): once more,
		// from scratch.
		s.known.Delete(filepath.Dir(p))
		err = s.put(b, p, nil)
	}
	if err != nil {
		return fmt.Errorf("dedup: put %s: %w", key, err)
	}
	return nil
}

// put stores b at p through the temp file f (a new one when nil). A missing
// fan-out directory is made meanwhile: its mkdir and the file's fsync overlap.
func (s *DiskStore) put(b []byte, p string, f *os.File) (err error) {
	dir := filepath.Dir(p)
	var dirErr chan error
	if _, ok := s.known.Load(dir); !ok {
		dirErr = make(chan error, 1)
		go func() { dirErr <- s.ensureDir(dir) }()
	}
	if f == nil {
		f, err = os.CreateTemp(s.tmp, "put-*")
	}
	if err == nil {
		err = writeSync(f, b)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if dirErr != nil {
		if derr := <-dirErr; err == nil {
			err = derr
		}
	}
	if err == nil {
		err = atomicfile.Rename(f.Name(), p)
	}
	if err != nil {
		if f != nil {
			os.Remove(f.Name())
		}
		return err
	}
	crashpoint.Synced()
	return nil
}

// writeSync writes b into the empty file f and fsyncs it. The bytes go to the
// disk directly where they can (writeDirect): a chunk is written once and
// read back rarely, so copying it into the page cache first costs CPU (about
// as much as hashing it, measured) and makes the fsync flush it, for no
// read that follows.
func writeSync(f *os.File, b []byte) error {
	done, err := writeDirect(f, b)
	if err != nil {
		return err
	}
	if !done {
		if _, err := f.Write(b); err != nil {
			return err
		}
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync: %w", err)
	}
	crashpoint.Synced()
	return nil
}

// ensureDir makes sure the fan-out directory dir exists, durably: when it
// had to be created, its parent is fsynced too (and the grandparent for a new
// first level), or a crash could lose the directory with the blobs in it.
func (s *DiskStore) ensureDir(dir string) error {
	if _, ok := s.known.Load(dir); ok {
		return nil
	}
	top := filepath.Dir(dir)
	for _, d := range []string{top, dir} {
		err := os.Mkdir(d, 0o700)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := syncDir(filepath.Dir(d)); err != nil {
			return err
		}
	}
	s.known.Store(dir, struct{}{})
	return nil
}

// takeSpare returns the temp file made ahead for this Put (nil when none is
// ready) and starts making the next one.
func (s *DiskStore) takeSpare() *os.File {
	var f *os.File
	select {
	case f = <-s.spare:
	default:
	}
	if s.refilling.CompareAndSwap(false, true) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return f // Puts after Close make their own temp files
		}
		s.refill.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.refill.Done()
			defer s.refilling.Store(false)
			nf, err := os.CreateTemp(s.tmp, "spare-*")
			if err != nil {
				return // the Put that needs it makes its own and reports
			}
			select {
			case s.spare <- nf:
			default:
				nf.Close()
				os.Remove(nf.Name())
			}
		}()
	}
	return f
}

// Close waits for the spare being made and removes the one waiting. Puts
// may still follow (they make their own temp files).
func (s *DiskStore) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.refill.Wait()
	select {
	case f := <-s.spare:
		f.Close()
		os.Remove(f.Name())
	default:
	}
	return nil
}

func syncDir(dir string) error {
	if err := atomicfile.SyncDir(dir); err != nil {
		return fmt.Errorf("dedup: fsync dir: %w", err)
	}
	crashpoint.Synced()
	return nil
}

// Open returns the blob as an *os.File.
func (s *DiskStore) Open(_ context.Context, key Key) (io.ReadSeekCloser, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("dedup: open %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("dedup: open %s: %w", key, err)
	}
	return f, nil
}

// Has reports whether the blob file exists.
func (s *DiskStore) Has(_ context.Context, key Key) (bool, error) {
	p, err := s.path(key)
	if err != nil {
		return false, err
	}
	_, err = os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Delete removes the blob file.
func (s *DiskStore) Delete(_ context.Context, key Key) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("dedup: delete %s: %w", key, err)
	}
	return nil
}

// Walk visits every blob file; the tmp folder of in-flight Puts is skipped.
func (s *DiskStore) Walk(ctx context.Context, fn func(Key) error) error {
	return filepath.WalkDir(s.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "tmp" {
				return fs.SkipDir
			}
			return nil
		}
		k := Key(d.Name())
		if !k.Valid() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		return fn(k)
	})
}
