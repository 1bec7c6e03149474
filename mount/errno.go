package mount

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"unicode/utf8"

	"netdisk/client"
)

// Errno is the one table from backend errors to errnos. Anything that is not
// an answer of the server (connection refused, timeout) is EIO: the caller
// gets an error after the deadline instead of a hang.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errors.Is(err, context.Canceled) {
		return syscall.EINTR
	}
	// A transport failure carries the socket's errno (ECONNREFUSED…),
	// which must not reach the caller as if the file had it.
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &ue) || errors.As(err, &oe) || errors.Is(err, context.DeadlineExceeded) {
		return syscall.EIO
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
		// A WebDAV lock held elsewhere (README, "Locks"): EACCES, as Linux
		// CIFS answers a lock conflict. Tools report it once and stop;
		// EAGAIN would make some retry in a loop on a blocking descriptor,
		// EBUSY reads as a busy mount point.
		return syscall.EACCES
	}
	return syscall.EIO
}

// maxNameLen is NAME_MAX, what statfs reports and local filesystems enforce.
const maxNameLen = 255

// checkName refuses a new name the drive cannot hold with the errno a local
// filesystem gives, before anything is sent: the server would only say 400
// (EINVAL) or fail further in (EIO). Names are UTF-8 on the drive (WebDAV
// and JSON carry nothing else).
func (f *FS) checkName(name string) syscall.Errno {
	if len(name) > maxNameLen {
		return syscall.ENAMETOOLONG
	}
	if !utf8.ValidString(name) {
		f.o.Logger.Warn("mount: refused a name that is not UTF-8; the drive stores UTF-8 names only", "name", fmt.Sprintf("%q", name))
		return syscall.EILSEQ
	}
	return 0
}

// lookupName is checkName for a name looked up: a name the drive cannot
// hold does not exist there (ENOENT, so tools go on to create it and get
// the clear error then), except a too long one, which is refused as such.
func lookupName(name string) syscall.Errno {
	if len(name) > maxNameLen {
		return syscall.ENAMETOOLONG
	}
	if !utf8.ValidString(name) {
		return syscall.ENOENT
	}
	return 0
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

// refusedByLock reports whether the server refused a write because of a
// WebDAV lock (423): a final answer, unlike a transport failure.
func refusedByLock(err error) bool { return client.StatusOf(err) == http.StatusLocked }
