package mount

import (
	"context"
	"errors"
	"net/http"
	"os"
	"syscall"

	"netdisk/client"
)

// Errno is the one table from backend errors to errnos. Anything that is not
// an answer of the server (connection refused, timeout) is EIO: the caller
// gets an error after the deadline instead of a hang.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return en
	}
	if errors.Is(err, ErrStale) {
		return syscall.ESTALE
	}
	if errors.Is(err, os.ErrNotExist) {
		return syscall.ENOENT
	}
	if errors.Is(err, context.Canceled) {
		return syscall.EINTR
	}
	switch client.StatusOf(err) {
	case 0:
		return syscall.EIO
	case http.StatusNotFound:
		return syscall.ENOENT
	case http.StatusConflict:
		return conflictErrno(err)
	case http.StatusBadRequest:
		return syscall.EINVAL
	case http.StatusUnauthorized, http.StatusForbidden:
		return syscall.EACCES
	case http.StatusInsufficientStorage:
		// Both 507s: the user's quota (EDQUOT) or the server's disk (ENOSPC),
		// told apart by the body's code.
		var e *client.Error
		if errors.As(err, &e) && e.Code == "quota_exceeded" {
			return syscall.EDQUOT
		}
		return syscall.ENOSPC
	case http.StatusRequestEntityTooLarge:
		return syscall.EFBIG
	case http.StatusPreconditionFailed:
		return syscall.ESTALE
	case http.StatusLocked:
		return syscall.EBUSY
	}
	return syscall.EIO
}

// conflictErrno tells apart the 409s by the server's message, the only
// place they differ.
func conflictErrno(err error) syscall.Errno {
	var e *client.Error
	errors.As(err, &e)
	m := e.Message
	switch {
	case contains(m, "not empty"), contains(m, "notempty"):
		return syscall.ENOTEMPTY
	case contains(m, "not a directory"):
		return syscall.ENOTDIR
	case contains(m, "is a directory"):
		return syscall.EISDIR
	case contains(m, "parent") || contains(m, "no such"):
		return syscall.ENOENT
	}
	return syscall.EEXIST
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
