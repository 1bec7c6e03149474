// Package atomicfile writes files that must survive a crash whole: a reader
// sees the old file (or none) or all of the new one, and once a write
// returns, the new file is on the disk, its name too.
//
// The steps are always the same: write a temporary file in the destination's
// folder, fsync it, rename it over the destination, fsync the folder. The
// file's fsync makes its bytes durable before any name points at them (or a
// crash could leave the name on an empty or torn file); the rename makes the
// switch atomic; the folder's fsync makes the rename itself durable.
//
// This is the durable rule, for what the user or the store is promised
// (downloaded files, chunks, an agent's journal). internal/cachefile is the
// other rule, for caches: atomic but not durable, with no fsync at all,
// because a cache may lose an entry and checks what it reads anyway.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Write writes dst atomically and durably with perm: write fills a
// temporary file in dst's folder (made when missing), which is then fsynced,
// renamed to dst, and the folder fsynced. On any failure the temporary file
// is removed and dst is left as it was.
func Write(dst string, perm fs.FileMode, write func(io.Writer) error) error {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return WriteIn(root, filepath.Base(dst), perm, write)
}

// WriteIn is Write for rel under root: root refuses any path that leaves it,
// through ".." or a symlink, so a name from elsewhere cannot write outside it.
func WriteIn(root *os.Root, rel string, perm fs.FileMode, write func(io.Writer) error) (err error) {
	dir := path.Dir(rel)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b := make([]byte, 6)
	rand.Read(b)
	tmp := path.Join(dir, "."+path.Base(rel)+"."+hex.EncodeToString(b)+".tmp")
	f, err := root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	// The umask may have narrowed perm at create time; the destination gets
	// what the caller asked for.
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := root.Rename(tmp, rel); err != nil {
		return err
	}
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Rename moves the temporary file tmp, already written, fsynced and closed
// by the caller, to dst and fsyncs dst's folder: the last two steps of
// Write, for callers that write the file their own way (resumable
// downloads, preallocated or direct-I/O files). tmp must be in the same file
// system as dst.
func Rename(tmp, dst string) error {
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(dst))
}

// SyncDir fsyncs the folder dir, so that the names just created, renamed or
// removed in it survive a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
