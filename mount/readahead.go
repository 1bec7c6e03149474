package mount

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// readAhead is the readahead window, and so the largest read request, the
// mount asks the kernel for: 1 MiB, the most a FUSE request carries
// (max_pages 256, which go-fuse negotiates from MaxWrite).
const readAhead = 1 << 20

// raiseReadAhead sets the readahead of the mount at dir to readAhead. The
// kernel caps a FUSE mount's readahead at its default 128 KiB whatever
// max_readahead the filesystem answers at init, so a sequential read comes
// as 128 KiB requests, each a trip through the kernel and a wake-up of a
// mount thread: eight times the requests of 1 MiB ones. Only the mount's
// own backing device (its bdi, named after the mount's device number) has
// the setting, and only root may write it; anyone else keeps 128 KiB, so a
// failure is logged and the mount goes on.
func raiseReadAhead(dir string, log *slog.Logger) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		log.Debug("mount: readahead left at the kernel's default", "err", err)
		return
	}
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", unix.Major(st.Dev), unix.Minor(st.Dev))
	if err := os.WriteFile(p, []byte(strconv.Itoa(readAhead>>10)), 0); err != nil {
		log.Debug("mount: readahead left at the kernel's default", "err", err)
	}
}
