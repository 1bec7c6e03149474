//go:build !linux

package dav

import "io"

// willNeed is a no-op where posix_fadvise is not offered.
func willNeed(io.Reader, int64, int64) {}
