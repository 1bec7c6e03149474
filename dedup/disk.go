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
)

// DiskStore keeps blobs as files under dir/ab/cd/<key>, two levels of fan-out
// so no directory grows past a few thousand entries at realistic sizes.
type DiskStore struct {
	dir string

	// known holds fan-out directories known to exist (blobs are deleted,
	// directories never are), so a Put does not stat or mkdir them each time.
	known sync.Map

	// spare is a new, unnamed file made ahead of the next Put (Linux:
	// O_TMPFILE, see disk_linux.go), so the request does not wait for the
	// inode to be allocated: on a busy file system that costs more than the
	// fsync. An unnamed file disappears with the process; nothing to clean.
	spare     chan *os.File
	refilling atomic.Bool
}

var _ BlobStore = (*DiskStore)(nil)

// NewDiskStore opens (creating if needed) a blob store rooted at dir.
func NewDiskStore(dir string) (*DiskStore, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("dedup: create store: %w", err)
	}
	return &DiskStore{dir: dir, spare: make(chan *os.File, 1)}, nil
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
	dir := filepath.Dir(p)
	if err := s.ensureDir(dir); err != nil {
		return fmt.Errorf("dedup: put %s: %w", key, err)
	}
	if f := s.takeSpare(); f != nil {
		if done, err := putUnnamed(f, b, p); done {
			if err != nil {
				return fmt.Errorf("dedup: put %s: %w", key, err)
			}
			return syncDir(dir)
		}
		// Naming an unnamed file is not possible here: the portable way.
	}
	f, err := os.CreateTemp(filepath.Join(s.dir, "tmp"), string(key[:8])+"-*")
	if err != nil {
		return fmt.Errorf("dedup: put %s: %w", key, err)
	}
	success := false
	defer func() {
		if !success {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("dedup: put %s: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("dedup: put %s: fsync: %w", key, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("dedup: put %s: %w", key, err)
	}
	if err := os.Rename(f.Name(), p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.known.Delete(dir) // removed behind our back: the next Put recreates it
		}
		return fmt.Errorf("dedup: put %s: %w", key, err)
	}
	success = true
	return syncDir(dir)
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

// takeSpare returns the file made ahead for this Put, or a new one, and
// starts making the next; nil where unnamed files are not supported.
func (s *DiskStore) takeSpare() *os.File {
	var f *os.File
	select {
	case f = <-s.spare:
	default:
		var err error
		if f, err = openUnnamed(filepath.Join(s.dir, "tmp")); err != nil {
			return nil // not supported here (or no room): the caller falls back
		}
	}
	if s.refilling.CompareAndSwap(false, true) {
		go func() {
			defer s.refilling.Store(false)
			if nf, err := openUnnamed(filepath.Join(s.dir, "tmp")); err == nil {
				select {
				case s.spare <- nf:
				default:
					nf.Close()
				}
			}
		}()
	}
	return f
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("dedup: fsync dir: %w", err)
	}
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
