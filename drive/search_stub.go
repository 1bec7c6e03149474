package drive

// TEMPORARY stand-in for the search branch's drive/search.go (same
// signature); removed when that branch is merged.

import (
	"context"
	"strings"
	"time"

	"netdisk/meta"
	"path"
	"sort"
	"strconv"
)

type SearchQuery struct {
	Pattern                       string
	Glob                          bool
	Under                         string
	Limit                         int
	Cursor                        string
	ModifiedAfter, ModifiedBefore time.Time
	FilesOnly                     bool
}

type SearchPage struct {
	Hits []meta.Node
	Next string
}

func (d *Drive) Search(ctx context.Context, uid int64, q SearchQuery) (SearchPage, error) {
	under := q.Under
	if under == "" {
		under = "/"
	}
	all, err := d.Tree(ctx, uid, under, 100000)
	if err != nil {
		return SearchPage{}, err
	}
	var out []meta.Node
	pat := strings.ToLower(q.Pattern)
	for _, n := range all {
		name := strings.ToLower(n.Name())
		ok := false
		if q.Glob {
			ok, _ = path.Match(pat, name)
		} else {
			ok = strings.Contains(name, pat)
		}
		if ok && (!q.FilesOnly || !n.IsDir) {
			out = append(out, n)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ModTime.After(out[j].ModTime) })
	off, _ := strconv.Atoi(q.Cursor)
	out = out[min(off, len(out)):]
	lim := q.Limit
	if lim == 0 {
		lim = 100
	}
	next := ""
	if len(out) > lim {
		out = out[:lim]
		next = strconv.Itoa(off + lim)
	}
	return SearchPage{Hits: out, Next: next}, nil
}
