//go:build !linux

package drive

import "os"

// freeBytes: the reserve is kept on Linux only (reserve_linux.go).
func freeBytes(string) (int64, bool) { return 0, false }

// volumeBytes: unknown off Linux (the history is then bounded by age and
// quotas alone).
func volumeBytes(string) int64 { return 0 }

func allocateFile(f *os.File, size int64) error { return writeZeros(f, size) }
