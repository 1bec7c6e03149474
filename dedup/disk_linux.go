package dedup

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed makes a new file without a name in dir's file system
// (O_TMPFILE): it exists only while open, so a crash leaves nothing behind.
func openUnnamed(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), dir+"/(unnamed)"), nil
}

// putUnnamed writes b to the unnamed file f, fsyncs it and gives it the name
// p; the caller fsyncs p's directory. done is false (and f closed) when the
// name cannot be given this way, so the caller can fall back to a named temp
// file; f is always closed.
func putUnnamed(f *os.File, b []byte, p string) (done bool, err error) {
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return true, err
	}
	if err := f.Sync(); err != nil {
		return true, fmt.Errorf("fsync: %w", err)
	}
	// linkat through /proc/self/fd needs no privilege (AT_EMPTY_PATH does).
	err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, p, unix.AT_SYMLINK_FOLLOW)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EEXIST):
		// The same content was stored meanwhile; its writer fsynced the bytes
		// before naming them, and our caller fsyncs the directory.
		return true, nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.EPERM), errors.Is(err, unix.EXDEV), errors.Is(err, unix.EOPNOTSUPP):
		return false, nil // no /proc, or a file system that cannot: fall back
	}
	return true, err
}
