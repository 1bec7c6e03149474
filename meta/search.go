package meta

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"netdisk/errs"
)

// NameQuery is a search of one user's nodes by name (SearchNames).
type NameQuery struct {
	Pattern string // compared case-insensitively (namematch.go); never empty
	Glob    bool   // '*' and '?' are wildcards over the whole name; else Pattern is a substring
	// Under limits the search to the nodes strictly below this cleaned
	// folder; "" or "/" is the whole tree.
	Under string
	// After continues a search: only nodes older than this position in
	// the order (mtime, id), both descending. The zero SearchPos starts at
	// the newest.
	After SearchPos
	// ModifiedAfter and ModifiedBefore bound the modification time,
	// strictly; zero is unbounded.
	ModifiedAfter, ModifiedBefore time.Time
	FilesOnly                     bool
	Limit                         int // > 0
}

// SearchPos is a node's place in the search order: newest first, ties by
// the higher id first.
type SearchPos struct {
	MTime int64 // Unix nanoseconds
	ID    int64
}

// PosOf returns n's position in the search order.
func PosOf(n Node) SearchPos { return SearchPos{MTime: n.ModTime.UnixNano(), ID: n.ID} }

// Matches reports whether n answers q's name and node conditions (not
// Under nor After): for a node a caller found otherwise, such as a
// recipient's entry of a shared node, which has the entry's name in their
// view and the shared node's time and kind.
func (q NameQuery) Matches(n Node) bool {
	switch {
	case n.Path == "/" || q.Pattern == "" || !newNameMatcher(q.Pattern, q.Glob).match(n.Name()):
		return false
	case !q.ModifiedAfter.IsZero() && n.ModTime.UnixNano() <= q.ModifiedAfter.UnixNano():
		return false
	case !q.ModifiedBefore.IsZero() && n.ModTime.UnixNano() >= q.ModifiedBefore.UnixNano():
		return false
	}
	return !q.FilesOnly || !n.IsDir
}

// Follows reports whether p comes after q in the search order (older, or
// as old with a lower id): what a search continued at q returns.
func (p SearchPos) Follows(q SearchPos) bool {
	return p.MTime < q.MTime || p.MTime == q.MTime && p.ID < q.ID
}

// NameSearch finds nodes by name.
type NameSearch interface {
	// SearchNames returns up to q.Limit of uid's nodes (never the root)
	// whose name matches q, newest first (ties by id), and whether more
	// follow the last one returned. It reads the index of names migration
	// 015 (PostgreSQL: 009) keeps beside the tree, which the database
	// updates itself on every insert, rename and delete of a node, so no
	// write path can leave it behind.
	SearchNames(ctx context.Context, uid int64, q NameQuery) (hits []Node, more bool, err error)
}

// How a SQLite search chooses between its two ways to a page. It first
// counts the index's candidates for the pattern, up to probeCap (a count of
// the index alone, a few milliseconds even for a gram every other name
// holds). Up to probeCap, it reads those candidates' nodes and sorts them:
// few rows, whatever the drive's size. Beyond, the pattern is common, and
// reading the user's nodes newest first fills a page within a few
// thousand rows (a letter, "img", ".jpg") where sorting every candidate
// would not; that walk stops after scanBudget rows (the pattern may be
// common in the drive but rare among this user's newest nodes, or under
// this folder), and the index's candidates answer the rest.
const (
	probeCap   = 10000
	scanBudget = 20000
)

// SearchNames implements NameSearch.
func (s *SQLStore) SearchNames(ctx context.Context, uid int64, q NameQuery) ([]Node, bool, error) {
	const op = "meta.SearchNames"
	if q.Pattern == "" || q.Limit <= 0 {
		return nil, false, errs.E(op, errs.Invalid, "", fmt.Errorf("empty pattern or limit %d", q.Limit))
	}
	m := newNameMatcher(q.Pattern, q.Glob)
	pos := q.After
	if pos == (SearchPos{}) {
		pos = SearchPos{MTime: math.MaxInt64, ID: math.MaxInt64}
	}
	var hits []Node
	// take reads one batch of candidates after pos, keeps those that match
	// exactly, and reports whether the batch came back full (more may follow).
	take := func(query string, args []any, batch int) (bool, error) {
		rows, err := s.r.QueryContext(ctx, query, append(args, batch)...)
		if err != nil {
			return false, err
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			nd, err := scanNode(rows)
			if err != nil {
				return false, err
			}
			n++
			pos = PosOf(nd)
			if nd.Path != "/" && m.match(nd.Name()) {
				hits = append(hits, nd)
				if len(hits) > q.Limit {
					return true, nil
				}
			}
		}
		return n == batch, rows.Err()
	}
	walk := func(budget int) (bool, error) {
		for {
			where, args := q.filters(uid, pos)
			full, err := take(searchWalkSQL(where), args, min(budget, 1000))
			if err != nil || !full || len(hits) > q.Limit {
				return full, err
			}
			if budget -= 1000; budget <= 0 {
				return true, nil
			}
		}
	}
	var err error
	if s.pgSearch {
		// PostgreSQL's planner weighs the trigram index against the time
		// order itself; the loop only refills a page the exact comparison
		// thinned.
		like := likePattern(q.Pattern, q.Glob)
		for len(hits) <= q.Limit {
			where, args := q.filters(uid, pos)
			var full bool
			full, err = take(`SELECT `+nodeCols+` FROM nodes WHERE `+where+` AND lower(name) LIKE ? ESCAPE '\' ORDER BY mtime_ns DESC, id DESC LIMIT ?`,
				append(args, like), q.Limit+1-len(hits))
			if err != nil || !full {
				break
			}
		}
	} else if terms := ftsTerms(q.Pattern, q.Glob); len(terms) == 0 {
		_, err = walk(math.MaxInt)
	} else {
		var fq string
		var common bool
		if fq, common, err = s.chooseTerms(ctx, terms); err == nil && common {
			var full bool
			full, err = walk(s.searchScan)
			if !full || len(hits) > q.Limit {
				fq = ""
			}
		}
		for full := true; err == nil && fq != "" && full && len(hits) <= q.Limit; {
			where, args := q.filters(uid, pos)
			full, err = take(searchIndexSQL(where), append([]any{fq}, args...), q.Limit+1-len(hits))
		}
	}
	if err != nil {
		return nil, false, wrap(op, "", err)
	}
	if len(hits) > q.Limit {
		return hits[:q.Limit], true, nil
	}
	return hits, false, nil
}

// chooseTerms picks the full-text query a search reads its candidates
// with, and says whether they are too many to sort (common: walk the time
// order first). A term alone is counted cheaply (the index reads its
// document list only as far as the count goes), where a conjunction reads
// every term's list whole, a cost that grows with how common each term is.
// So up to eight terms, spread over the pattern, are counted one by one,
// up to searchProbe each: when some are rare, the rarest three are the
// query (every match holds them; the exact comparison drops the others).
// When every term is common, so is the pattern, most likely: the walk
// tries first, and a conjunction of four terms at most is the query it
// falls back on.
func (s *SQLStore) chooseTerms(ctx context.Context, terms []string) (string, bool, error) {
	type counted struct {
		term string
		n    int
	}
	var rare []counted
	for _, t := range spread(terms, 8) {
		var n int
		err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT docid FROM node_names WHERE node_names MATCH ? LIMIT ?)`, t, s.searchProbe+1).Scan(&n)
		if err != nil {
			return "", false, err
		}
		if n <= s.searchProbe {
			rare = append(rare, counted{t, n})
		}
	}
	if len(rare) == 0 {
		return strings.Join(spread(terms, 4), " "), true, nil
	}
	slices.SortFunc(rare, func(a, b counted) int { return a.n - b.n })
	var q []string
	for _, c := range rare[:min(len(rare), 3)] {
		q = append(q, c.term)
	}
	return strings.Join(q, " "), false, nil
}

// spread returns at most n of terms, the first and the last among them,
// the others evenly between.
func spread(terms []string, n int) []string {
	if len(terms) <= n {
		return terms
	}
	out := make([]string, n)
	for i := range out {
		out[i] = terms[i*(len(terms)-1)/(n-1)]
	}
	return out
}

// searchWalkSQL reads the nodes matching where in the search's order,
// newest first, by the time index.
func searchWalkSQL(where string) string {
	return `SELECT ` + nodeCols + ` FROM nodes WHERE ` + where + ` ORDER BY mtime_ns DESC, id DESC LIMIT ?`
}

// searchIndexSQL reads the nodes matching where whose names hold the
// full-text query's grams, in the search's order. The candidates drive
// (CROSS JOIN keeps them the outer loop) and are then sorted: walking the
// time index and probing each node against them would read every node of
// the user.
func searchIndexSQL(where string) string {
	return `SELECT ` + nodeCols + ` FROM node_names CROSS JOIN nodes ON id = docid
		WHERE node_names MATCH ? AND ` + where + ` ORDER BY mtime_ns DESC, id DESC LIMIT ?`
}

// filters is the WHERE clause of q's node conditions after pos, on the
// columns of nodes unqualified.
func (q NameQuery) filters(uid int64, pos SearchPos) (string, []any) {
	// LiveNodes: what is in the trash is not in the drive, so not found.
	conds := []string{`user_id = ?`, LiveNodes, `(mtime_ns, id) < (?, ?)`}
	args := []any{uid, pos.MTime, pos.ID}
	if q.Under != "" && q.Under != "/" {
		c, a := subtree(q.Under)
		conds = append(conds, c)
		args = append(args, a...)
	}
	if !q.ModifiedAfter.IsZero() {
		conds = append(conds, `mtime_ns > ?`)
		args = append(args, q.ModifiedAfter.UnixNano())
	}
	if !q.ModifiedBefore.IsZero() {
		conds = append(conds, `mtime_ns < ?`)
		args = append(args, q.ModifiedBefore.UnixNano())
	}
	if q.FilesOnly {
		conds = append(conds, `is_dir = 0`)
	}
	return strings.Join(conds, " AND "), args
}
