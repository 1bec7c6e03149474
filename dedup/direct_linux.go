package dedup

import (
	"errors"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directAlign is the alignment O_DIRECT asks of the memory, the file offset
// and the length: 4096 covers the logical block size of every disk in use
// (512 or 4096).
const directAlign = 4096

// writeDirect writes b at the start of the empty file f bypassing the page
// cache (O_DIRECT, switched on for this write only): the aligned prefix goes
// straight from b to the disk, a tail shorter than directAlign through the
// page cache. done is false, with nothing written, when this write cannot be
// direct (b not aligned in memory, or a file system without O_DIRECT); the
// caller then writes as usual. Only the data moves differently: the caller's
// fsync is still what makes it durable.
func writeDirect(f *os.File, b []byte) (done bool, err error) {
	n := len(b) &^ (directAlign - 1)
	if n == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%directAlign != 0 {
		return false, nil
	}
	fd := int(f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return false, nil
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags|unix.O_DIRECT); err != nil {
		return false, nil // EINVAL: this file system has no O_DIRECT
	}
	m, err := f.WriteAt(b[:n], 0)
	if _, ferr := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags); ferr != nil && err == nil {
		err = ferr
	}
	if errors.Is(err, unix.EINVAL) && m == 0 {
		return false, nil // refused before anything was written
	}
	if err != nil {
		return true, err
	}
	if n < len(b) {
		_, err = f.WriteAt(b[n:], int64(n))
	}
	return true, err
}
