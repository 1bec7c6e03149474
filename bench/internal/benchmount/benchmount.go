// Package benchmount starts the FUSE mounts the benchmarks compare and waits
// for them.
package benchmount

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Rclone returns the (not started) `rclone mount --vfs-cache-mode writes` of
// the daemon at url's WebDAV on dir for user, with its cache in cacheDir.
func Rclone(url, dir, cacheDir, user, pass string) (*exec.Cmd, error) {
	obscured, err := exec.Command("rclone", "obscure", pass).Output()
	if err != nil {
		return nil, fmt.Errorf("rclone obscure: %w", err)
	}
	return exec.Command("rclone", "mount", ":webdav:", dir, "--webdav-url", url+"/dav/", "--webdav-vendor", "other",
		"--webdav-user", user, "--webdav-pass", strings.TrimSpace(string(obscured)),
		"--vfs-cache-mode", "writes", "--cache-dir", cacheDir, "--config", "/dev/null"), nil
}

// WaitMounted waits until dir is a mount point of this process's namespace.
func WaitMounted(dir string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile("/proc/self/mountinfo")
		if strings.Contains(string(b), " "+dir+" ") {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not mounted after %v", dir, d)
}
