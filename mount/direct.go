package mount

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directAlign is the alignment O_DIRECT asks of a write's memory, offset
// and length on the filesystems a cache sits on (their logical block size
// is at most the page size).
const directAlign = 4096

// writeDirect writes data to the new, empty file f with O_DIRECT when it
// can: the chunk goes from our buffer to the disk, not copied into the page
// cache first. A cached chunk is already in memory twice (our buffer, and
// the kernel's pages of the mounted file its reader gets), and the copy into
// a third place, with the page allocation and reclaim it costs on a busy
// machine, was most of the mount's CPU on a cold sequential read. It
// leaves f at offset 0 and buffered (what is written is written again by
// the caller) when the filesystem refuses O_DIRECT (tmpfs) or data is not
// aligned (a file's last chunk); on success f's offset is past the data.
func writeDirect(f *os.File, data []byte) bool {
	if len(data) == 0 || len(data)%directAlign != 0 || uintptr(unsafe.Pointer(&data[0]))%directAlign != 0 {
		return false
	}
	fd := int(f.Fd())
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return false
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl|unix.O_DIRECT); err != nil {
		return false
	}
	_, werr := f.Write(data)
	unix.FcntlInt(uintptr(fd), unix.F_SETFL, fl)
	if werr != nil {
		f.Truncate(0)
		f.Seek(0, 0)
		return false
	}
	return true
}
