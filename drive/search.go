package drive

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
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
//
// The folders shared with uid are searched too, read-only ones included,
// as a walk of their tree sees them (Tree): each of their entries in
// scope is matched by the name it has in their tree and stands for the
// shared node, and the shared folder's contents are searched in the
// owner's tree and named at uid's paths. The owner's tree is searched
// without resolving again, so an entry the owner has in there is the
// empty folder it is in their tree: shares given back and forth do not
// loop. A node reached by two entries (a folder shared with uid and a
// folder inside it shared too) is one hit, at its path through the inner
// entry.
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
	ctx, w, err := d.resolve(ctx, op, uid, under, readAccess)
	if err != nil {
		return SearchPage{}, err
	}
	if w.path != "/" {
		n, err := d.meta.Stat(ctx, w.uid, w.path)
		if err != nil {
			return SearchPage{}, w.err(err)
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
	hits, last, err := d.searchViews(ctx, w, under, mq)
	if err != nil {
		return SearchPage{}, err
	}
	page := SearchPage{Hits: hits}
	if last != nil {
		page.Next = encodeSearchCursor(*last, fp)
	}
	return page, nil
}

// searchViews runs mq in the tree w resolved under (the asker's path)
// into and in the shared folders below it, merges the answers in the
// search order and returns one page of them, in the asker's terms, and the
// position the next page continues at (nil when no more).
func (d *Drive) searchViews(ctx context.Context, w where, under string, mq meta.NameQuery) ([]meta.Node, *meta.SearchPos, error) {
	type source struct {
		uid   int64
		under string
		w     where
	}
	var hits []meta.Node
	sources := []source{{uid: w.uid, under: w.path, w: w}}
	entry := make(map[int64]bool)
	if w.m == nil {
		for _, m := range w.mounts {
			entry[m.NodeID] = true
			if !m.Live() || !vpath.IsBelow(m.Path, under) && under != "/" {
				continue
			}
			// The entry is matched by the name the asker gave it, with the
			// shared node's time, kind and id (what a listing shows).
			t, err := d.meta.NodeByID(ctx, m.OwnerID, m.Target)
			if err != nil {
				continue // gone meanwhile
			}
			t.Path = m.Path
			if mq.Matches(t) && (mq.After == meta.SearchPos{} || meta.PosOf(t).Follows(mq.After)) {
				hits = append(hits, t)
			}
			if m.TargetDir {
				sources = append(sources, source{uid: m.OwnerID, under: m.TargetAt, w: where{m: &m}})
			}
		}
	}
	// A node reached through two entries is named through the innermost
	// one (the folder shared with the asker directly): deeper shared
	// folders are searched first, and the first hit of a node is kept.
	slices.SortStableFunc(sources[1:], func(a, b source) int { return len(b.under) - len(a.under) })
	// Each tree answers a page of its own; the merged page ends where the
	// first of them that has more stopped (what follows there may be newer
	// than another tree's later hits). The asker's own tree is asked for
	// as many more as there are entries, which it answers as the folder
	// rows they are in that tree and are dropped here.
	var cut *meta.SearchPos
	limit := mq.Limit
	for i, s := range sources {
		sq := mq
		sq.Under = s.under
		if i == 0 {
			sq.Limit += len(entry)
		}
		found, more, err := d.meta.SearchNames(ctx, s.uid, sq)
		if errs.Is(err, errs.NotFound) && i > 0 {
			continue // the shared folder is gone meanwhile
		}
		if err != nil {
			return nil, nil, s.w.err(err)
		}
		if more && len(found) > 0 {
			if p := meta.PosOf(found[len(found)-1]); cut == nil || cut.Follows(p) {
				cut = &p
			}
		}
		for _, n := range found {
			if i == 0 && entry[n.ID] {
				continue
			}
			hits = append(hits, s.w.node(n))
		}
	}
	slices.SortStableFunc(hits, func(a, b meta.Node) int {
		pa, pb := meta.PosOf(a), meta.PosOf(b)
		switch {
		case pa == pb:
			return 0
		case pb.Follows(pa):
			return -1
		}
		return 1
	})
	out := hits[:0]
	for i, n := range hits {
		if i > 0 && n.ID == hits[i-1].ID {
			continue // the same node through a second entry
		}
		if cut != nil && meta.PosOf(n).Follows(*cut) {
			break
		}
		out = append(out, n)
	}
	if len(out) > limit {
		out = out[:limit]
		p := meta.PosOf(out[limit-1])
		return out, &p, nil
	}
	if cut != nil {
		return out, cut, nil
	}
	return out, nil, nil
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
