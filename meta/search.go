package meta

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
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

// scanBudget bounds how many of the user's newest nodes a SQLite search
// reads in time order before it turns to the index of names. A pattern
// common enough to fill a page within them (a letter, ".jpg") is answered
// by that walk, which stops at the page; a rarer one by the index, whose
// candidates are then few enough to sort. Either way a first page costs at
// most about this many rows, however many nodes the user has.
const scanBudget = 20000

// SearchNames implements NameSearch.
func (s *SQLStore) SearchNames(ctx context.Context, uid int64, q NameQuery) ([]Node, bool, error) {
	const op = "meta.SearchNames"
	if q.Pattern == "" || q.Limit <= 0 {
		return nil, false, fmt.Errorf("%s: empty pattern or limit %d", op, q.Limit)
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
	} else if fq := ftsQuery(q.Pattern, q.Glob); fq == "" {
		_, err = walk(math.MaxInt)
	} else {
		full := true
		if s.searchScan > 0 {
			full, err = walk(s.searchScan)
		}
		for err == nil && full && len(hits) <= q.Limit {
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
	conds := []string{`user_id = ?`, `(mtime_ns, id) < (?, ?)`}
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
