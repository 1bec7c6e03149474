package dav

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// willNeed starts reading [off, off+n) of f into the page cache in the
// background (POSIX_FADV_WILLNEED); a hint only, so errors are ignored.
func willNeed(f io.Reader, off, n int64) {
	if osf, ok := f.(*os.File); ok {
		unix.Fadvise(int(osf.Fd()), off, n, unix.FADV_WILLNEED)
	}
}
