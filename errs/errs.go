// Package errs gives netdisk's errors a kind that every layer agrees on, so the
// edges (HTTP API, WebDAV, FUSE) translate an error to a status or errno in one
// table each, and the core never speaks HTTP.
package errs

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"syscall"
)

// Kind classifies an error for translation at the edge. Each comment names
// the HTTP status of the JSON API (HTTPStatus, api.Status) and the errno of
// the FUSE mount (mount.Errno); WebDAV (dav.Status) differs where RFC 4918
// says so.
type Kind int

const (
	Other           Kind = iota // unexpected: 500 / EIO
	NotFound                    // 404 / ENOENT
	Exists                      // 409 / EEXIST (WebDAV: 405 or 412)
	NotDir                      // a path component is a file: 409 / ENOTDIR
	IsDir                       // file operation on a directory: 409 / EISDIR (WebDAV: 405)
	NoParent                    // the parent collection is missing: 409 / ENOENT
	Invalid                     // bad input: 400 / EINVAL
	Permission                  // 403 / EACCES
	Quota                       // the user's quota: 507 / EDQUOT
	Conflict                    // state conflict, e.g. missing chunks, a merged session: 409 / EIO
	Unauthenticated             // 401 / EACCES
	Unavailable                 // a dependency is down: 503 / EIO
	TooLarge                    // 413 / EFBIG
	NotEmpty                    // 409 / ENOTEMPTY
	Mismatch                    // content does not match its claimed hash: 422 / EIO
	Locked                      // a WebDAV lock forbids it: 423 / EACCES
	Precondition                // a conditional header failed: 412 / ESTALE
	Canceled                    // the caller went away or gave up: 499, not logged as a failure / EINTR
	NoSpace                     // the server's storage is full: 507 / ENOSPC (Quota is the user's limit)
	Throttled                   // too many failed sign-ins, retry later: 429 (with Retry-After) / EIO
	TooMany                     // a bound on waiters or queues is reached, retry later: 429 / EIO
	Unsupported                 // content the operation cannot take (not an image, or one refused for a thumbnail): 415 / EIO
	ReadOnly                    // a write through a read-only share: 403 / EROFS
	CrossTree                   // a move that cannot change trees (a share's entry into a share): 502 / EXDEV, so tools copy and delete
)

// StatusClientClosed is the status recorded for a request whose client went
// away (nginx's 499): nothing reaches the client, but logs and metrics tell it
// apart from a server failure.
const StatusClientClosed = 499

var kindNames = [...]string{"other", "not found", "exists", "not a directory", "is a directory",
	"parent missing", "invalid", "permission denied", "quota exceeded", "conflict",
	"unauthenticated", "unavailable", "too large", "not empty", "hash mismatch", "locked",
	"precondition failed", "canceled", "no space left on the server", "too many attempts", "too many requests",
	"unsupported media", "read-only share", "cross-tree move"}

// kindCodes are the machine-readable codes of the API's error bodies
// ({"error": ..., "code": ...}, shared/API.md); clients decide on them, never
// on the text. Part of the wire contract: never renamed.
var kindCodes = [...]string{"internal", "not_found", "exists", "not_a_directory", "is_a_directory",
	"parent_missing", "invalid", "permission_denied", "quota_exceeded", "conflict",
	"unauthenticated", "unavailable", "too_large", "not_empty", "hash_mismatch", "locked",
	"precondition_failed", "canceled", "no_space", "throttled", "too_many_requests",
	"unsupported_media_type", "read_only", "cross_tree"}

// Code returns the machine-readable code of err's kind.
func Code(err error) string { return KindOf(err).Code() }

// Code returns the kind's machine-readable code.
func (k Kind) Code() string {
	if int(k) < len(kindCodes) {
		return kindCodes[k]
	}
	return "internal"
}

// KindOfCode returns the kind whose code is code, so a client decides on an
// API answer's code the way the server decided on the kind; ok is false for
// a code this build does not know (a newer server's), which is then Other.
func KindOfCode(code string) (k Kind, ok bool) {
	for i, c := range kindCodes {
		if c == code {
			return Kind(i), true
		}
	}
	return Other, false
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is an error with the operation that failed, its kind and its cause.
type Error struct {
	Op   string // e.g. "drive.Mkdir"
	Kind Kind
	Path string // the user's path, when there is one
	Err  error  // the cause, may be nil
}

func (e *Error) Error() string {
	msg := e.Op
	if e.Path != "" {
		msg += " " + e.Path
	}
	msg += ": " + e.Kind.String()
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// E builds an Error. A nil cause is fine: the kind says enough.
func E(op string, kind Kind, path string, err error) error {
	return &Error{Op: op, Kind: kind, Path: path, Err: err}
}

// Errorf builds an Error whose cause is a formatted message.
func Errorf(op string, kind Kind, format string, args ...any) error {
	return &Error{Op: op, Kind: kind, Err: fmt.Errorf(format, args...)}
}

// KindOf returns the kind of the outermost *Error in err's chain whose kind is
// not Other; else Canceled for a cancelled or expired context; else NoSpace
// when the cause is a full file system (ENOSPC, or EDQUOT of the server's
// own disk quota), wherever in the stack it was raised; else Other.
func KindOf(err error) Kind {
	orig := err
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			break
		}
		if e.Kind != Other {
			return e.Kind
		}
		err = e.Err
	}
	if errors.Is(orig, context.Canceled) || errors.Is(orig, context.DeadlineExceeded) {
		return Canceled
	}
	if errors.Is(orig, syscall.ENOSPC) || errors.Is(orig, syscall.EDQUOT) {
		return NoSpace
	}
	return Other
}

// Classified reports whether err carries an *Error, i.e. the code that failed
// gave it a kind (even Other), as opposed to a plain error such as a request
// body that could not be read.
func Classified(err error) bool {
	var e *Error
	return errors.As(err, &e)
}

// Is reports whether err has the given kind.
func Is(err error, k Kind) bool { return err != nil && KindOf(err) == k }

// ErrLedgerUnreachable marks a quota ledger (Redis) failure; users see only
// its text, never the cause (which names the server's address).
var ErrLedgerUnreachable = errors.New("service unavailable: quota ledger unreachable")

// Message returns a one-line message for users: the innermost cause's text
// without the internal op chain when the kind is known. Unexpected errors and
// a full disk get a fixed text: their causes name server paths, which never
// reach a client (the edges log the detail). A cause that is not netdisk's
// own wording (ownText: a database's, a network's or a file system's error,
// which may name addresses, paths or the back end's internals) is never
// shown: the kind's name stands in for it. An Unavailable error caused by a
// dependency's error shows a generic text too; one whose cause is the
// application's own sentence shows it.
func Message(err error) string {
	switch KindOf(err) {
	case Other:
		return "internal error"
	case NoSpace:
		return NoSpace.String()
	case Unavailable:
		if errors.Is(err, ErrLedgerUnreachable) {
			return ErrLedgerUnreachable.Error()
		}
		if c := innermost(err); c == nil || errors.Unwrap(c) != nil || !ownText(c) {
			return "service unavailable"
		}
	}
	// The outermost *Error with a kind: an Other wrapper around it adds
	// only internal detail.
	var e *Error
	for x := err; errors.As(x, &e) && e.Kind == Other; x = e.Err {
	}
	if e != nil && e.Kind != Other {
		if e.Err != nil {
			var inner *Error
			if errors.As(e.Err, &inner) {
				return Message(e.Err)
			}
			if ownText(e.Err) {
				if e.Path != "" {
					return e.Path + ": " + e.Err.Error()
				}
				return e.Err.Error()
			}
		}
		if e.Path != "" {
			return e.Path + ": " + e.Kind.String()
		}
		return e.Kind.String()
	}
	return "internal error"
}

// ownText reports whether err's text may reach a user: every error in its
// chain is netdisk's own wording (a plain errors.New or fmt.Errorf text, a
// type of netdisk's packages) or a standard library parser's complaint about
// the request (strconv, encoding/xml, …). A back end speaking anywhere in
// the chain (a driver's or an SDK's error type: pgconn.PgError,
// sqlite3.Error, an S3 response, a go-redis reply; or the system's: the
// net, os, io/fs, syscall and database/sql errors, which name addresses and
// server paths) makes the text the log's, never a response's.
func ownText(err error) bool {
	for err != nil {
		if !ownType(err) {
			return false
		}
		switch x := err.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range x.Unwrap() {
				if !ownText(c) {
					return false
				}
			}
			return true
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		default:
			return true
		}
	}
	return true
}

// module is netdisk's module path, the first element of this package's.
var module, _, _ = strings.Cut(reflect.TypeOf(Error{}).PkgPath(), "/")

// systemPackages are the standard library's packages whose errors carry
// what the system or a back end said.
var systemPackages = map[string]bool{"net": true, "net/url": true, "os": true, "io/fs": true, "syscall": true,
	"database/sql": true, "database/sql/driver": true, "crypto/tls": true, "crypto/x509": true, "os/exec": true}

func ownType(err error) bool {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p := t.PkgPath()
	first, _, _ := strings.Cut(p, "/")
	switch {
	case p == "":
		return false
	case first == module:
		return true
	case strings.Contains(first, "."): // another module: a driver or an SDK
		return false
	}
	return !systemPackages[p]
}

// innermost returns the cause of the innermost *Error in err's chain.
func innermost(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return nil
	}
	if e.Err != nil {
		var inner *Error
		if errors.As(e.Err, &inner) {
			return innermost(e.Err)
		}
	}
	return e.Err
}
