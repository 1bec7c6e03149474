package drive

import (
	"os"

	"golang.org/x/sys/unix"
)

// freeBytes returns the bytes an unprivileged writer may still use on the
// file system holding dir.
func freeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}

// volumeBytes returns the size of the file system holding dir.
func volumeBytes(dir string) int64 {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0
	}
	return int64(st.Blocks) * int64(st.Bsize)
}

// allocateFile gives f size bytes of real blocks.
func allocateFile(f *os.File, size int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, 0, size)
	if err == unix.EOPNOTSUPP {
		return writeZeros(f, size)
	}
	if err != nil {
		return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
	}
	return nil
}
