package drive

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"netdisk/errs"
	"netdisk/meta"
)

// SearchQuery is a search of a user's drive by name.
type SearchQuery struct {
	// Pattern is compared with each name without regard to case (Unicode
	// simple case folding, except that a non-ASCII letter never matches an
	// ASCII one: meta/namematch.go).
	Pattern string
	// Glob makes '*' (any run, also empty) and '?' (one character)
	// wildcards over the whole name; every other character is literal.
	// Without it Pattern is a substring of the name, every character
	// literal.
	Glob bool
	// Under limits the search to the folder's contents, at any depth; ""
	// or "/" is the whole drive.
	Under string
	// Limit is the page's size: 0 means DefaultSearchLimit, at most
	// MaxSearchLimit.
	Limit int
	// Cursor continues a search: the Next of the page before, with the same
	// query; "" is the first page.
	Cursor string
	// ModifiedAfter and ModifiedBefore bound the modification time,
	// strictly; zero is unbounded.
	ModifiedAfter, ModifiedBefore time.Time
	// FilesOnly leaves folders out (they match too otherwise).
	FilesOnly bool
}

// SearchPage is one page of a search, newest first (ties: the later
// created first).
type SearchPage struct {
	Hits []meta.Node
	Next string // "" when no more
}

// The bounds of a search page.
const (
	DefaultSearchLimit = 100
	MaxSearchLimit     = 1000
	// MaxSearchPattern bounds a pattern's length in bytes: no name is longer
	// than 255.
	MaxSearchPattern = 1024
)

// Search returns a page of uid's files and folders whose names match q,
// newest first. The names are looked up in an index the metadata store
// keeps (meta.NameSearch), not by walking the tree. Empty, oversized or
// non-UTF-8 patterns, a bad cursor (or one from another query), a limit
// out of range and a bad folder are Invalid; a missing folder is NotFound
// and a file given as the folder NotDir.
func (d *Drive) Search(ctx context.Context, uid int64, q SearchQuery) (SearchPage, error) {
	const op = "drive.Search"
	switch {
	case q.Pattern == "":
		return SearchPage{}, errs.E(op, errs.Invalid, "", errors.New("empty search pattern"))
	case len(q.Pattern) > MaxSearchPattern || !utf8.ValidString(q.Pattern):
		return SearchPage{}, errs.E(op, errs.Invalid, "", fmt.Errorf("search pattern not UTF-8 or longer than %d bytes", MaxSearchPattern))
	case q.Limit < 0 || q.Limit > MaxSearchLimit:
		return SearchPage{}, errs.E(op, errs.Invalid, "", fmt.Errorf("search limit %d out of range 1..%d", q.Limit, MaxSearchLimit))
	}
	if q.Limit == 0 {
		q.Limit = DefaultSearchLimit
	}
	under := "/"
	if q.Under != "" {
		var err error
		if under, err = clean(op, q.Under); err != nil {
			return SearchPage{}, err
		}
	}
	if under != "/" {
		n, err := d.meta.Stat(ctx, uid, under)
		if err != nil {
			return SearchPage{}, err
		}
		if !n.IsDir {
			return SearchPage{}, errs.E(op, errs.NotDir, under, nil)
		}
	}
	mq := meta.NameQuery{
		Pattern:        q.Pattern,
		Glob:           q.Glob,
		Under:          under,
		ModifiedAfter:  q.ModifiedAfter,
		ModifiedBefore: q.ModifiedBefore,
		FilesOnly:      q.FilesOnly,
		Limit:          q.Limit,
	}
	fp := searchFingerprint(mq)
	if q.Cursor != "" {
		pos, err := decodeSearchCursor(q.Cursor, fp)
		if err != nil {
			return SearchPage{}, errs.E(op, errs.Invalid, "", err)
		}
		mq.After = pos
	}
	hits, more, err := d.meta.SearchNames(ctx, uid, mq)
	if err != nil {
		return SearchPage{}, err
	}
	page := SearchPage{Hits: hits}
	if more && len(hits) > 0 {
		page.Next = encodeSearchCursor(meta.PosOf(hits[len(hits)-1]), fp)
	}
	return page, nil
}

// A cursor is the last hit's place in the order (mtime, id) and a
// fingerprint of the query it belongs to, so a cursor handed to another
// query is refused rather than silently skipping or repeating names. It
// names no path and no other user's data: a forged one can only start a
// search of the caller's own drive elsewhere. The limit is not part of
// the query: a client may change the page size between pages.
const searchCursorLen = 1 + 8 + 8 + 8

func searchFingerprint(q meta.NameQuery) uint64 {
	h := sha256.New()
	fmt.Fprintf(h, "%q %t %q %d %d %t", q.Pattern, q.Glob, q.Under, timeKey(q.ModifiedAfter), timeKey(q.ModifiedBefore), q.FilesOnly)
	return binary.BigEndian.Uint64(h.Sum(nil))
}

func timeKey(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func encodeSearchCursor(p meta.SearchPos, fp uint64) string {
	b := make([]byte, 0, searchCursorLen)
	b = append(b, 1) // version
	b = binary.BigEndian.AppendUint64(b, uint64(p.MTime))
	b = binary.BigEndian.AppendUint64(b, uint64(p.ID))
	b = binary.BigEndian.AppendUint64(b, fp)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeSearchCursor(s string, fp uint64) (meta.SearchPos, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != searchCursorLen || b[0] != 1 {
		return meta.SearchPos{}, errors.New("bad search cursor")
	}
	if binary.BigEndian.Uint64(b[17:]) != fp {
		return meta.SearchPos{}, errors.New("search cursor of another query")
	}
	return meta.SearchPos{MTime: int64(binary.BigEndian.Uint64(b[1:])), ID: int64(binary.BigEndian.Uint64(b[9:]))}, nil
}
