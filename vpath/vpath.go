// Package vpath validates and manipulates paths inside a user's drive. Every
// path that comes from a client goes through Clean before it reaches the core,
// so no layer below can be handed a path that leaves the user's root.
package vpath

import (
	"errors"
	"path"
	"strings"
	"unicode/utf8"
)

// Limits on what a path may be; beyond them a client is refused with 400.
const (
	MaxPathLen = 4096
	MaxNameLen = 255
)

// ErrInvalid is wrapped by every error Clean returns.
var ErrInvalid = errors.New("invalid path")

type invalidError string

func (e invalidError) Error() string { return "invalid path: " + string(e) }
func (e invalidError) Unwrap() error { return ErrInvalid }

// Clean returns p as a canonical absolute path ("/" for the root, no trailing
// slash, no empty, "." or ".." segments). It refuses ".." segments (even ones
// that would stay inside the root: clients never need them, and refusing is
// simpler to trust than resolving), NUL and control bytes, invalid UTF-8 and
// overlong paths or names.
func Clean(p string) (string, error) {
	if len(p) > MaxPathLen {
		return "", invalidError("too long")
	}
	if !utf8.ValidString(p) {
		return "", invalidError("not UTF-8")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", invalidError("control character")
		}
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", invalidError("'..' segment")
		}
		if len(seg) > MaxNameLen {
			return "", invalidError("name too long")
		}
	}
	return path.Clean("/" + p), nil
}

// Parent returns the parent of a cleaned path ("" for the root).
func Parent(p string) string {
	if p == "/" {
		return ""
	}
	return path.Dir(p)
}

// Base returns the last element of a cleaned path.
func Base(p string) string { return path.Base(p) }

// Join joins a cleaned directory path and a name.
func Join(dir, name string) string { return path.Join(dir, name) }

// IsBelow reports whether p is strictly below dir (both cleaned).
func IsBelow(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// MaxRelLen bounds a relative directory CleanRel accepts.
const MaxRelLen = 1024

// relError is a CleanRel refusal: its text is the reason alone, for the
// caller to name the field it checked.
type relError string

func (e relError) Error() string { return string(e) }
func (e relError) Unwrap() error { return ErrInvalid }

// CleanRel checks a directory relative to a root that is not the drive's (an
// async agent's target directory, under the agent's own root): no NUL, no
// empty, "." or ".." segments, at most MaxRelLen bytes; leading and trailing
// slashes are dropped, so "" and "/" mean the root. It returns the cleaned
// form ("" for the root). Both the server (on the request) and the agent (on
// what it is handed) check with it, so neither trusts the other.
func CleanRel(d string) (string, error) {
	d = strings.Trim(d, "/")
	if d == "" {
		return "", nil
	}
	if strings.ContainsRune(d, 0) || len(d) > MaxRelLen {
		return "", relError("invalid")
	}
	for _, seg := range strings.Split(d, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", relError("no empty, '.' or '..' segments")
		}
	}
	return d, nil
}
