package mount

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"unicode/utf8"

	"netdisk/client"
	"netdisk/errs"
	"netdisk/vpath"
)

// Errno is the one table from backend errors to errnos. An answer of the
// server is translated by its kind, which its code names (client.KindOf),
// never by its text; errs.go's comments list the same errnos. A server out
// of reach (a refused or failed connection, or known lost: link.go) is
// EHOSTDOWN, "Host is down", as Linux CIFS answers for a lost server: it
// names the cause, where EIO reads as a broken disk and ENOTCONN as a
// crashed mount. Anything else that is not an answer of the server (a
// timeout) is EIO: the caller gets an error after the deadline instead of
// a hang.
func Errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	if errors.Is(err, context.Canceled) {
		return syscall.EINTR
	}
	if unreachable(err) {
		return syscall.EHOSTDOWN
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
	if client.StatusOf(err) == 0 {
		return syscall.EIO // not the server's answer
	}
	return kindErrno(client.KindOf(err))
}

// kindErrno is the table proper, one errno per kind of the server's answer.
func kindErrno(k errs.Kind) syscall.Errno {
	switch k {
	case errs.NotFound, errs.NoParent:
		return syscall.ENOENT
	case errs.Exists:
		return syscall.EEXIST
	case errs.NotDir:
		return syscall.ENOTDIR
	case errs.IsDir:
		return syscall.EISDIR
	case errs.NotEmpty:
		return syscall.ENOTEMPTY
	case errs.Invalid:
		return syscall.EINVAL
	case errs.Permission, errs.Unauthenticated:
		return syscall.EACCES
	case errs.Locked:
		// A WebDAV lock held elsewhere (README, "Locks"): EACCES, as Linux
		// CIFS answers a lock conflict. Tools report it once and stop;
		// EAGAIN would make some retry in a loop on a blocking descriptor,
		// EBUSY reads as a busy mount point.
		return syscall.EACCES
	case errs.ReadOnly:
		return syscall.EROFS // a read-only share: as a read-only mount answers
	case errs.CrossTree:
		return syscall.EXDEV // mv then copies and deletes
	case errs.Quota:
		return syscall.EDQUOT // the user's quota
	case errs.NoSpace:
		return syscall.ENOSPC // the server's disk
	case errs.TooLarge:
		return syscall.EFBIG
	case errs.Precondition:
		return syscall.ESTALE
	case errs.Canceled:
		return syscall.EINTR
	}
	// Other, Conflict (an upload's state raced: the write failed), Mismatch,
	// Unavailable, Throttled and TooMany (try again later), Unsupported (a
	// thumbnail's refusal, never a file operation's): the operation failed.
	return syscall.EIO
}

// maxNameLen is NAME_MAX, what statfs reports and local filesystems enforce;
// the drive holds the same (vpath.MaxNameLen).
const maxNameLen = vpath.MaxNameLen

// checkName refuses a new name the drive cannot hold, in folder dir, with the
// errno a local filesystem gives, before anything is staged or sent: the
// server would only say 400 (EINVAL) or fail further in (EIO), and a staged
// file for a path that can never be stored would wait for an upload forever.
// Names are UTF-8 on the drive (WebDAV and JSON carry nothing else), and a
// whole path is at most vpath.MaxPathLen bytes (PATH_MAX): deeper folders
// are reachable by relative paths, but the drive cannot hold them.
func (f *FS) checkName(dir, name string) syscall.Errno {
	if len(name) > maxNameLen || pathTooLong(dir, name) {
		return syscall.ENAMETOOLONG
	}
	if !utf8.ValidString(name) {
		f.o.Logger.Warn("mount: refused a name that is not UTF-8; the drive stores UTF-8 names only", "name", logName(fmt.Sprintf("%q", name)))
		return syscall.EILSEQ
	}
	return 0
}

// lookupName is checkName for a name looked up: a name the drive cannot
// hold does not exist there (ENOENT, so tools go on to create it and get
// the clear error then), except a too long one, which is refused as such.
func lookupName(dir, name string) syscall.Errno {
	if len(name) > maxNameLen || pathTooLong(dir, name) {
		return syscall.ENAMETOOLONG
	}
	if !utf8.ValidString(name) {
		return syscall.ENOENT
	}
	return 0
}

func pathTooLong(dir, name string) bool { return len(joinPath(dir, name)) > vpath.MaxPathLen }

// logName bounds a path or name written to the log: a path may be 4 KiB,
// and an error quoting it more; a log line stays readable (and greppable)
// with its head and tail.
func logName(s string) string {
	const keep = 120
	if len(s) <= 2*keep+32 {
		return s
	}
	head, tail := s[:keep], s[len(s)-keep:]
	// Cut on rune boundaries, so the line stays valid UTF-8.
	for len(head) > 0 && !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	for len(tail) > 0 && !utf8.ValidString(tail) {
		tail = tail[1:]
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", head, len(s), tail)
}

// logErr is logName for an error's text.
func logErr(err error) string {
	if err == nil {
		return ""
	}
	return logName(err.Error())
}

// refusedByLock reports whether the server refused a write because of a
// WebDAV lock (423): a final answer, unlike a transport failure.
func refusedByLock(err error) bool { return client.KindOf(err) == errs.Locked }
