//go:build !linux

package dedup

import "os"

// writeDirect: direct I/O is used on Linux only (direct_linux.go).
func writeDirect(*os.File, []byte) (bool, error) { return false, nil }
