package dav

// Answering SEARCH (RFC 5323, DAV:basicsearch): the scope is resolved inside
// the user's own tree, candidates come from the drive's name index
// (drive.Search) and every predicate is then evaluated here on each
// candidate, so the index only ever narrows and never decides. Results are
// written by the PROPFIND writer (propWriter), so a property reads the same
// in both answers.

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// MaxSearchScan bounds the candidates one SEARCH evaluates. A query whose
// name predicate the index answers stops as soon as it has its results; a
// query without one (say, every image: getcontenttype like image/%), or one
// ordered otherwise than newest first, reads candidates newest first up to
// this bound and, if it runs out before the matches do, says so with a 507
// response for the scope (RFC 5323 §2.4.3's truncation) rather than walking
// a whole drive.
const MaxSearchScan = 10000

// searchPage is how many candidates one drive.Search call returns at most.
const searchPage = 1000

var errScopeOutside = errors.New("the search scope is not in your drive")

func (h *Handler) search(w http.ResponseWriter, r *http.Request, fs *FS, _ string) (int, error) {
	ctx := r.Context()
	body, err := readXMLBody(r)
	if err != nil {
		return 0, err
	}
	req, err := parseSearch(body)
	if err != nil {
		return 0, errs.E("dav.Search", errs.Invalid, "", err)
	}
	scope, err := h.searchScope(r, fs, req.href)
	if err != nil {
		return 0, err
	}
	root, err := fs.D.Stat(ctx, fs.UID, scope)
	if errs.Is(err, errs.NotFound) || errs.Is(err, errs.NotDir) {
		return 0, errs.Errorf("dav.Search", errs.Conflict, "the search scope %s does not exist", scope)
	}
	if err != nil {
		return 0, err
	}
	hits, truncated, err := runSearch(ctx, fs, req, root, cmp.Or(h.SearchScan, MaxSearchScan))
	if err != nil {
		return 0, err
	}
	pw := h.newPropWriter(ctx, fs, req.sel)
	if pw.needDead() {
		pw.dead = make(map[int64][]meta.Prop, len(hits))
		for _, n := range hits {
			if pw.dead[n.ID], err = fs.D.NodeProps(ctx, n); err != nil {
				return 0, err
			}
		}
	}
	if err := pw.loadQuota(); err != nil {
		return 0, err
	}
	var tail []byte
	if truncated {
		tail = append(tail, "<D:response><D:href>"...)
		tail = appendHref(tail, h.Prefix, root.Path, root.IsDir)
		tail = append(tail, "</D:href><D:status>HTTP/1.1 507 Insufficient Storage</D:status>"+
			"<D:error><D:number-of-matches-within-limits/></D:error><D:responsedescription>"...)
		tail = append(tail, "only the first "+strconv.Itoa(len(hits))+" results: narrow the query"...)
		tail = append(tail, "</D:responsedescription></D:response>\n"...)
	}
	pw.stream(w, nil, hits, tail)
	return 0, nil
}

// searchScope returns the drive path a scope href names. The href is taken
// as an absolute path under this handler's prefix (what a PROPFIND answer
// shows), or, as the Nextcloud clients send it, /files/NAME/… relative to
// the WebDAV root, where NAME must be the user's own. Anything else is
// outside the user's drive: 403, the same answer for another user's name as
// for a name nobody has.
func (h *Handler) searchScope(r *http.Request, fs *FS, href string) (string, error) {
	u, err := url.Parse(href)
	if err != nil {
		return "", errs.Errorf("dav.Search", errs.Invalid, "invalid scope href %q", clip(href))
	}
	if u.Host != "" && !strings.EqualFold(u.Host, r.Host) {
		return "", errs.E("dav.Search", errs.Permission, "", errScopeOutside)
	}
	p := r.URL.ResolveReference(u).Path
	if rest, ok := cutDir(p, h.Prefix); ok && h.Prefix != "" {
		return cleanScope(rest)
	}
	if rest, ok := cutDir(p, "/files"); ok {
		user, sub, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
		if user == fs.Name && user != "" {
			return cleanScope("/" + sub)
		}
	}
	if h.Prefix == "" {
		return cleanScope(p)
	}
	return "", errs.E("dav.Search", errs.Permission, "", errScopeOutside)
}

// cutDir reports whether p is dir or below it, and the rest ("/" for dir).
func cutDir(p, dir string) (string, bool) {
	rest, ok := strings.CutPrefix(p, dir)
	switch {
	case !ok:
		return "", false
	case rest == "":
		return "/", true
	case rest[0] == '/':
		return rest, true
	}
	return "", false
}

func cleanScope(p string) (string, error) {
	c, err := vpath.Clean(p)
	if err != nil {
		return "", errs.E("dav.Search", errs.Invalid, "", err)
	}
	return c, nil
}

// runSearch returns the nodes in scope that match, in the requested order,
// at most req.limit of them, and whether matches were left out for a bound
// of the server's (scan candidates, MaxSearchResults) rather than the
// client's limit.
func runSearch(ctx context.Context, fs *FS, req searchReq, root meta.Node, scan int) ([]meta.Node, bool, error) {
	var hits []meta.Node
	keep := func(n meta.Node) {
		if req.where == nil || req.where.eval(candidateOf(n)) == triTrue {
			hits = append(hits, n)
		}
	}
	truncated := false
	switch {
	case req.depth == 0 || !root.IsDir:
		keep(root)
	case req.depth == 1:
		_, kids, err := fs.D.ListDir(ctx, fs.UID, root.Path)
		if err != nil {
			return nil, false, err
		}
		for _, n := range kids {
			keep(n)
		}
	default:
		q := planSearch(req.where)
		q.Under = root.Path
		// Without an order of its own the drive's (newest first) is the
		// answer's, and the first req.limit matches are the answer: stop
		// there. Another order needs every match to sort.
		natural := len(req.order) == 0 || req.order[0] == (searchOrder{prop: "getlastmodified", desc: true})
		q.Limit = min(searchPage, scan)
		if natural {
			q.Limit = min(q.Limit, max(2*req.limit, 100))
		}
		scanned := 0
		for {
			page, err := fs.D.Search(ctx, fs.UID, q)
			if err != nil {
				return nil, false, err
			}
			for _, n := range page.Hits {
				if n.Path != root.Path {
					keep(n)
				}
			}
			scanned += len(page.Hits)
			// With DAV:nresults capped, one match more tells whether the
			// cap left any out.
			if natural && (len(hits) > req.limit || len(hits) == req.limit && !req.capped) || page.Next == "" {
				break
			}
			if scanned >= scan {
				truncated = true
				break
			}
			q.Cursor = page.Next
		}
	}
	order := req.order
	if len(order) == 0 && req.depth == 1 {
		// A folder lists by name; a search answers newest first, as the
		// index does at depth infinity.
		order = []searchOrder{{prop: "getlastmodified", desc: true}}
	}
	sortHits(hits, order)
	if len(hits) > req.limit {
		truncated = truncated || req.capped
		hits = hits[:req.limit]
	}
	return hits, truncated, nil
}

// planSearch turns what the where clause requires of every match into a
// drive.Search query: a name predicate becomes the index's pattern (a glob
// when the like pattern's wildcards translate, else its longest literal
// run as a substring), bounds on getlastmodified become the modification
// window (widened by a second: dates compare to the second), and
// not(is-collection) files only. Only conjuncts are used: the index's
// answer must hold every match, and each candidate is evaluated in full
// afterwards. With no name predicate the pattern is the glob "*" (every
// name, newest first) and MaxSearchScan bounds the work.
func planSearch(where predicate) drive.SearchQuery {
	q := drive.SearchQuery{Pattern: "*", Glob: true}
	named := false
	var conj []predicate
	var flatten func(p predicate)
	flatten = func(p predicate) {
		if a, ok := p.(andPred); ok {
			for _, x := range a {
				flatten(x)
			}
			return
		}
		conj = append(conj, p)
	}
	if where != nil {
		flatten(where)
	}
	for _, p := range conj {
		switch p := p.(type) {
		case likePred:
			if p.prop == "displayname" && !named {
				q.Pattern, q.Glob, named = namePattern(p.pat)
			}
		case cmpPred:
			switch {
			case p.prop == "displayname" && p.op == "eq" && !named:
				q.Pattern, q.Glob, named = namePattern([]likeTok{{kind: 'l', lit: strings.ToLower(p.str)}})
			case p.prop == "getlastmodified" || p.prop == "creationdate":
				after, before := p.when.Add(-time.Second), p.when.Add(time.Second)
				if p.op == "gt" || p.op == "gte" || p.op == "eq" {
					if q.ModifiedAfter.IsZero() || after.After(q.ModifiedAfter) {
						q.ModifiedAfter = after
					}
				}
				if p.op == "lt" || p.op == "lte" || p.op == "eq" {
					if q.ModifiedBefore.IsZero() || before.Before(q.ModifiedBefore) {
						q.ModifiedBefore = before
					}
				}
			}
		case notPred:
			if _, ok := p.p.(isCollectionPred); ok {
				q.FilesOnly = true
			}
		}
	}
	if !named {
		q.Pattern, q.Glob = "*", true
	}
	return q
}

// namePattern translates a like pattern into the index's terms. The
// index's globs know * and ? only, so a pattern whose literal text holds
// one of those (which the glob would take for a wildcard) falls back to a
// substring search on its longest literal run. ok is false when the
// pattern has no literal text at all (% alone): no name predicate.
func namePattern(pat []likeTok) (pattern string, glob, ok bool) {
	safe := true
	for _, t := range pat {
		if t.kind == 'l' && strings.ContainsAny(t.lit, "*?") {
			safe = false
		}
	}
	switch {
	case len(pat) == 3 && pat[0].kind == '%' && pat[1].kind == 'l' && pat[2].kind == '%' && safe:
		return pat[1].lit, false, true // %text%: what the Nextcloud apps send
	case safe:
		var b strings.Builder
		for _, t := range pat {
			switch t.kind {
			case '%':
				b.WriteByte('*')
			case '_':
				b.WriteByte('?')
			default:
				b.WriteString(t.lit)
				ok = true
			}
		}
		if !ok {
			return "*", true, false
		}
		return b.String(), true, true
	}
	for _, t := range pat { // the longest literal run without * or ?
		if t.kind == 'l' {
			for _, f := range strings.FieldsFunc(t.lit, func(r rune) bool { return r == '*' || r == '?' }) {
				if len(f) > len(pattern) {
					pattern = f
				}
			}
		}
	}
	if pattern == "" {
		return "*", true, false
	}
	return pattern, false, true
}

// candidateOf is n's searchable properties, as PROPFIND shows them.
func candidateOf(n meta.Node) *candidate {
	c := &candidate{name: vpath.Base(n.Path), isDir: n.IsDir, mtime: n.ModTime.UTC().Truncate(time.Second), size: n.Size}
	if n.Path == "/" {
		c.name = ""
	}
	if !n.IsDir {
		c.ctype = ContentType(n.Path)
	}
	return c
}

// sortHits orders hits by the orderby keys; a property a resource lacks
// sorts last, and ties keep the drive's order (newest first).
func sortHits(hits []meta.Node, order []searchOrder) {
	if len(order) == 0 {
		return
	}
	slices.SortStableFunc(hits, func(a, b meta.Node) int {
		ca, cb := candidateOf(a), candidateOf(b)
		for _, o := range order {
			da, db := ca.defined(o.prop), cb.defined(o.prop)
			if da != db {
				if da {
					return -1
				}
				return 1
			}
			if !da {
				continue
			}
			var d int
			switch o.prop {
			case "displayname":
				d = cmp.Compare(strings.ToLower(ca.name), strings.ToLower(cb.name))
			case "getcontenttype":
				d = cmp.Compare(ca.ctype, cb.ctype)
			case "getcontentlength":
				d = cmp.Compare(ca.size, cb.size)
			default:
				d = ca.mtime.Compare(cb.mtime)
			}
			if o.desc {
				d = -d
			}
			if d != 0 {
				return d
			}
		}
		return 0
	})
}

// options answers OPTIONS as x/net/webdav would, plus SEARCH and the DASL
// header that tells clients (the Nextcloud apps look for SEARCH in Allow)
// which grammar it speaks, and without POST, which Serve refuses. Through a
// link, Allow keeps only what the link answers there (linkRefusal), and
// neither locking (DAV class 2) nor SEARCH is offered.
func (h *Handler) options(w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error) {
	allow := []string{"OPTIONS", "LOCK", "PUT", "MKCOL", "SEARCH"}
	n, err := fs.D.Stat(r.Context(), fs.UID, name)
	switch {
	case err == nil && n.IsDir:
		allow = []string{"OPTIONS", "LOCK", "DELETE", "PROPPATCH", "COPY", "MOVE", "UNLOCK", "PROPFIND", "SEARCH"}
	case err == nil:
		allow = []string{"OPTIONS", "LOCK", "GET", "HEAD", "DELETE", "PROPPATCH", "COPY", "MOVE", "UNLOCK", "PROPFIND", "PUT", "SEARCH"}
	case errs.Is(err, errs.Invalid):
		return 0, err
	}
	hd := w.Header()
	if h.link != nil {
		allow = slices.DeleteFunc(allow, func(m string) bool { return linkRefusal(h.link.Perm, m, name) != "" })
		hd.Set("DAV", "1")
	} else {
		hd.Set("DAV", "1, 2")
		hd.Set("DASL", "<DAV:basicsearch>")
	}
	hd.Set("Allow", strings.Join(allow, ", "))
	hd.Set("MS-Author-Via", "DAV")
	return http.StatusOK, nil
}
