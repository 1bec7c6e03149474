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
)

// DiskStore keeps blobs as files under dir/ab/cd/<key>, two levels of fan-out
// so no directory grows past a few thousand entries at realistic sizes.
type DiskStore struct {
	dir string
}

var _ BlobStore = (*DiskStore)(nil)

// NewDiskStore opens (creating if needed) a blob store rooted at dir.
func NewDiskStore(dir string) (*DiskStore, error) {
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o700); err != nil {
		return nil, fmt.Errorf("dedup: create store: %w", err)
	}
	return &DiskStore{dir: dir}, nil
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("dedup: put %s: %w", key, err)
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
		return fmt.Errorf("dedup: put %s: %w", key, err)
	}
	success = true
	return syncDir(dir)
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
