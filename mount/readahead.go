package mount

import (
	"bufio"
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
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
	dev, err := mountDevice(dir)
	if err == nil {
		err = os.WriteFile("/sys/class/bdi/"+dev+"/read_ahead_kb", []byte(strconv.Itoa(readAhead>>10)), 0)
	}
	if err != nil {
		log.Debug("mount: readahead left at the kernel's default", "err", err)
	}
}

// mountDevice returns the device number ("major:minor") of the mount at
// dir from /proc/self/mountinfo. Not from a stat of dir: that would ask
// our own filesystem, which would list the root folder and keep the list
// for the TTL, hiding what is added on the server meanwhile.
func mountDevice(dir string) (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	dev := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// id parent major:minor root mount-point options ...
		f := strings.Fields(sc.Text())
		if len(f) > 4 && unescapeMountinfo(f[4]) == dir {
			dev = f[2] // the last one listed is the one on top
		}
	}
	if dev == "" {
		return "", errors.New("mount point not in /proc/self/mountinfo: " + dir)
	}
	return dev, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) mountinfo
// writes in paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
