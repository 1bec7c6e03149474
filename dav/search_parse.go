package dav

// Parsing a SEARCH body (RFC 5323 DASL, the DAV:basicsearch grammar) into a
// searchReq: what to select, the scope, the where clause as a tree of
// predicates, the order and the limit. search.go runs it.

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// errSearchUnsupported marks a well-formed query that asks for what
// basicsearch here does not offer (another grammar, a property that is not
// searchable, contains): Status answers it 422, where a malformed body is 400.
var errSearchUnsupported = errors.New("unsupported search")

var errInvalidSearch = errors.New("invalid search body")

// maxSearchOperators bounds the predicates of one where clause: a client's
// query has a handful; a body of thousands would only cost evaluation time
// per candidate.
const maxSearchOperators = 100

// DefaultSearchResults is how many results a SEARCH without DAV:limit gets
// (as Nextcloud answers), and MaxSearchResults the most a DAV:limit may ask.
const (
	DefaultSearchResults = 100
	MaxSearchResults     = 1000
)

// searchReq is a parsed basicsearch query.
type searchReq struct {
	sel    propfindReq // what each result answers, exactly as a PROPFIND would
	href   string      // the scope, as sent
	depth  int         // 0, 1 or -1 (infinity, the default)
	where  predicate   // nil: every resource in scope
	order  []searchOrder
	limit  int  // DAV:nresults (at most MaxSearchResults), or DefaultSearchResults
	capped bool // DAV:nresults asked for more than MaxSearchResults
}

type searchOrder struct {
	prop string // a searchable property's local name (DAV: namespace)
	desc bool
}

// tri is a predicate's value in RFC 5323's three-valued logic: a comparison
// on a property the resource does not have is unknown, and only true
// selects a resource.
type tri int8

const (
	triFalse tri = iota
	triTrue
	triUnknown
)

func triOf(b bool) tri {
	if b {
		return triTrue
	}
	return triFalse
}

// predicate is one node of a where clause.
type predicate interface {
	eval(c *candidate) tri
}

// candidate is a resource under evaluation with the property values the
// predicates read.
type candidate struct {
	name  string // displayname
	isDir bool
	mtime time.Time // to the second, as getlastmodified shows it
	size  int64
	ctype string
}

type andPred []predicate
type orPred []predicate
type notPred struct{ p predicate }
type isCollectionPred struct{}

// isDefinedPred is DAV:is-defined on a searchable property.
type isDefinedPred struct{ prop string }

// cmpPred compares a property with a literal: op is eq, lt, gt, lte or gte.
type cmpPred struct {
	op       string
	prop     string
	caseless bool // eq on a string property: ASCII case-insensitive
	str      string
	num      int64
	when     time.Time
}

// likePred is DAV:like on a string property: % any run, _ one character,
// \ escapes; case-insensitive, as the drive's name search is.
type likePred struct {
	prop string
	pat  []likeTok
}

type likeTok struct {
	kind byte // 'l' literal text, '%' any run, '_' one character
	lit  string
}

func (p andPred) eval(c *candidate) tri {
	out := triTrue
	for _, q := range p {
		switch q.eval(c) {
		case triFalse:
			return triFalse
		case triUnknown:
			out = triUnknown
		}
	}
	return out
}

func (p orPred) eval(c *candidate) tri {
	out := triFalse
	for _, q := range p {
		switch q.eval(c) {
		case triTrue:
			return triTrue
		case triUnknown:
			out = triUnknown
		}
	}
	return out
}

func (p notPred) eval(c *candidate) tri {
	switch p.p.eval(c) {
	case triTrue:
		return triFalse
	case triFalse:
		return triTrue
	}
	return triUnknown
}

func (isCollectionPred) eval(c *candidate) tri { return triOf(c.isDir) }

func (p isDefinedPred) eval(c *candidate) tri { return triOf(c.defined(p.prop)) }

// defined reports whether the resource has the property, as PROPFIND answers
// it (hasLive): folders have no length and no content type.
func (c *candidate) defined(prop string) bool {
	switch prop {
	case "getcontentlength", "getcontenttype":
		return !c.isDir
	}
	return true
}

func (p cmpPred) eval(c *candidate) tri {
	if !c.defined(p.prop) {
		return triUnknown
	}
	var d int
	switch propTypes[p.prop] {
	case typeString:
		v := c.name
		if p.prop == "getcontenttype" {
			v = c.ctype
		}
		if p.caseless {
			d = strings.Compare(strings.ToLower(v), strings.ToLower(p.str))
		} else {
			d = strings.Compare(v, p.str)
		}
	case typeInt:
		d = cmpInt(c.size, p.num)
	case typeDate:
		d = c.mtime.Compare(p.when)
	}
	switch p.op {
	case "eq":
		return triOf(d == 0)
	case "lt":
		return triOf(d < 0)
	case "lte":
		return triOf(d <= 0)
	case "gt":
		return triOf(d > 0)
	case "gte":
		return triOf(d >= 0)
	}
	return triUnknown
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (p likePred) eval(c *candidate) tri {
	if !c.defined(p.prop) {
		return triUnknown
	}
	v := c.name
	if p.prop == "getcontenttype" {
		v = c.ctype
	}
	return triOf(likeMatch(p.pat, []rune(strings.ToLower(v))))
}

// likeMatch matches s against the pattern (its literals lower-cased), with
// backtracking only over the last %: linear in practice, never exponential.
func likeMatch(pat []likeTok, s []rune) bool {
	pi, si := 0, 0
	starP, starS := -1, 0
	lit := func(i int) []rune { return []rune(pat[i].lit) }
	for si < len(s) || pi < len(pat) {
		if pi < len(pat) {
			switch t := pat[pi]; t.kind {
			case '%':
				starP, starS = pi, si
				pi++
				continue
			case '_':
				if si < len(s) {
					pi++
					si++
					continue
				}
			default:
				l := lit(pi)
				if si+len(l) <= len(s) && string(s[si:si+len(l)]) == string(l) {
					pi++
					si += len(l)
					continue
				}
			}
		}
		if starP < 0 || starS >= len(s) {
			return false
		}
		starS++
		pi, si = starP+1, starS
	}
	return true
}

// parseLike reads a like pattern (RFC 5323 §5.18.1): % and _ are wildcards,
// \ makes the next character literal.
func parseLike(p string) ([]likeTok, error) {
	var toks []likeTok
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			toks = append(toks, likeTok{kind: 'l', lit: strings.ToLower(lit.String())})
			lit.Reset()
		}
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '\\':
			if i+1 == len(p) {
				return nil, fmt.Errorf("%w: like pattern ends in an escape", errInvalidSearch)
			}
			i++
			lit.WriteByte(p[i])
		case '%':
			flush()
			if len(toks) == 0 || toks[len(toks)-1].kind != '%' {
				toks = append(toks, likeTok{kind: '%'})
			}
		case '_':
			flush()
			toks = append(toks, likeTok{kind: '_'})
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return toks, nil
}

type propType int

const (
	typeString propType = iota + 1
	typeInt
	typeDate
)

// propTypes are the properties a where clause and an orderby may name (all
// in the DAV: namespace), with their types. creationdate is the modification
// time, as PROPFIND shows it.
var propTypes = map[string]propType{
	"displayname":      typeString,
	"getcontenttype":   typeString,
	"getlastmodified":  typeDate,
	"creationdate":     typeDate,
	"getcontentlength": typeInt,
}

// parseSearch parses a SEARCH body. A malformed body or one that breaks the
// grammar wraps errInvalidSearch (or the XML reader's error); a well-formed
// query this server cannot answer wraps errSearchUnsupported.
func parseSearch(body []byte) (searchReq, error) {
	req := searchReq{depth: -1, limit: DefaultSearchResults}
	if isSpace(body) {
		return req, fmt.Errorf("%w: empty body", errInvalidSearch)
	}
	p := &searchParser{nr: newNSReader(bytes.NewReader(body))}
	root, err := p.root()
	if err != nil {
		return req, err
	}
	if root.Name != (xml.Name{Space: nsDAV, Local: "searchrequest"}) {
		return req, fmt.Errorf("%w: root element must be DAV:searchrequest", errInvalidSearch)
	}
	grammar := 0
	err = p.children(func(e xml.StartElement) error {
		if e.Name != (xml.Name{Space: nsDAV, Local: "basicsearch"}) {
			return fmt.Errorf("%w: grammar %s (only DAV:basicsearch)", errSearchUnsupported, e.Name.Local)
		}
		grammar++
		return p.basicsearch(&req)
	})
	if err != nil {
		return req, err
	}
	if grammar != 1 {
		return req, fmt.Errorf("%w: want one DAV:basicsearch", errInvalidSearch)
	}
	if err := p.end(); err != nil {
		return req, err
	}
	return req, nil
}

type searchParser struct {
	nr  *nsReader
	ops int
}

// root returns the document's root element.
func (p *searchParser) root() (xml.StartElement, error) {
	for {
		t, err := p.nr.Token()
		if err == io.EOF {
			return xml.StartElement{}, fmt.Errorf("%w: no root element", errInvalidSearch)
		}
		if err != nil {
			return xml.StartElement{}, err
		}
		switch t := t.(type) {
		case xml.StartElement:
			return t, nil
		case xml.CharData:
			if !isSpace(t) {
				return xml.StartElement{}, fmt.Errorf("%w: text outside the root element", errInvalidSearch)
			}
		}
	}
}

// end checks that nothing but white space, comments and processing
// instructions follows the root element.
func (p *searchParser) end() error {
	for {
		t, err := p.nr.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.StartElement:
			return fmt.Errorf("%w: a second root element", errInvalidSearch)
		case xml.CharData:
			if !isSpace(t) {
				return fmt.Errorf("%w: text outside the root element", errInvalidSearch)
			}
		}
	}
}

// children calls f for each child element of the element just opened; f
// must consume the child whole. Text between children is refused; elements
// of other namespaces are skipped (RFC 4918 §17).
func (p *searchParser) children(f func(xml.StartElement) error) error {
	for {
		t, err := p.nr.Token()
		if err != nil {
			return err
		}
		switch t := t.(type) {
		case xml.EndElement:
			return nil
		case xml.CharData:
			if !isSpace(t) {
				return fmt.Errorf("%w: unexpected text %q", errInvalidSearch, clip(string(t)))
			}
		case xml.StartElement:
			if t.Name.Space != nsDAV {
				if err := p.nr.skip(); err != nil {
					return err
				}
				continue
			}
			if err := f(t); err != nil {
				return err
			}
		}
	}
}

// text reads the character data of the element just opened up to its end.
func (p *searchParser) text() (string, error) {
	var b strings.Builder
	for {
		t, err := p.nr.Token()
		if err != nil {
			return "", err
		}
		switch t := t.(type) {
		case xml.EndElement:
			return b.String(), nil
		case xml.CharData:
			b.Write(t)
		case xml.StartElement:
			return "", fmt.Errorf("%w: element %s where text was expected", errInvalidSearch, t.Name.Local)
		}
	}
}

func (p *searchParser) basicsearch(req *searchReq) error {
	seen := map[string]bool{}
	err := p.children(func(e xml.StartElement) error {
		if seen[e.Name.Local] {
			return fmt.Errorf("%w: more than one DAV:%s", errInvalidSearch, e.Name.Local)
		}
		seen[e.Name.Local] = true
		switch e.Name.Local {
		case "select":
			return p.selectProps(req)
		case "from":
			return p.from(req)
		case "where":
			return p.where(req)
		case "orderby":
			return p.orderby(req)
		case "limit":
			return p.limit(req)
		}
		return fmt.Errorf("%w: unknown element DAV:%s in basicsearch", errInvalidSearch, e.Name.Local)
	})
	if err != nil {
		return err
	}
	if !seen["select"] || !seen["from"] {
		return fmt.Errorf("%w: basicsearch needs DAV:select and DAV:from", errInvalidSearch)
	}
	return nil
}

func (p *searchParser) selectProps(req *searchReq) error {
	n := 0
	err := p.children(func(e xml.StartElement) error {
		n++
		switch e.Name.Local {
		case "allprop":
			req.sel = propfindReq{mode: modeAllProp}
			return p.nr.skip()
		case "prop":
			names, err := readNames(p.nr)
			req.sel = propfindReq{mode: modeProp, names: names}
			return err
		}
		return fmt.Errorf("%w: DAV:%s in select", errInvalidSearch, e.Name.Local)
	})
	if err == nil && n != 1 {
		err = fmt.Errorf("%w: select wants one DAV:prop or DAV:allprop", errInvalidSearch)
	}
	return err
}

func (p *searchParser) from(req *searchReq) error {
	scopes := 0
	err := p.children(func(e xml.StartElement) error {
		if e.Name.Local != "scope" {
			return fmt.Errorf("%w: DAV:%s in from", errInvalidSearch, e.Name.Local)
		}
		scopes++
		if scopes > 1 {
			return fmt.Errorf("%w: more than one scope", errSearchUnsupported)
		}
		return p.children(func(e xml.StartElement) error {
			switch e.Name.Local {
			case "href":
				s, err := p.text()
				req.href = strings.TrimSpace(s)
				return err
			case "depth":
				s, err := p.text()
				if err != nil {
					return err
				}
				switch strings.ToLower(strings.TrimSpace(s)) {
				case "0":
					req.depth = 0
				case "1":
					req.depth = 1
				case "infinity":
					req.depth = -1
				default:
					return fmt.Errorf("%w: depth %q", errInvalidSearch, clip(s))
				}
				return nil
			case "include-versions":
				return p.nr.skip()
			}
			return fmt.Errorf("%w: DAV:%s in scope", errInvalidSearch, e.Name.Local)
		})
	})
	if err == nil && (scopes == 0 || req.href == "") {
		err = fmt.Errorf("%w: from needs a scope with an href", errInvalidSearch)
	}
	return err
}

func (p *searchParser) where(req *searchReq) error {
	var preds []predicate
	err := p.children(func(e xml.StartElement) error {
		q, err := p.operator(e)
		preds = append(preds, q)
		return err
	})
	if err != nil {
		return err
	}
	if len(preds) != 1 {
		return fmt.Errorf("%w: where wants one operator", errInvalidSearch)
	}
	req.where = preds[0]
	return nil
}

// operator reads one where-clause operator whose start tag e was just read.
func (p *searchParser) operator(e xml.StartElement) (predicate, error) {
	if p.ops++; p.ops > maxSearchOperators {
		return nil, fmt.Errorf("%w: more than %d operators", errInvalidSearch, maxSearchOperators)
	}
	switch op := e.Name.Local; op {
	case "and", "or", "not":
		var args []predicate
		err := p.children(func(e xml.StartElement) error {
			q, err := p.operator(e)
			args = append(args, q)
			return err
		})
		if err != nil {
			return nil, err
		}
		switch {
		case op == "not" && len(args) != 1:
			return nil, fmt.Errorf("%w: not wants one operator", errInvalidSearch)
		case len(args) == 0:
			return nil, fmt.Errorf("%w: %s wants operators", errInvalidSearch, op)
		case op == "not":
			return notPred{args[0]}, nil
		case op == "and":
			return andPred(args), nil
		}
		return orPred(args), nil
	case "is-collection":
		return isCollectionPred{}, p.nr.skip()
	case "is-defined":
		prop, err := p.onlyProp()
		if err != nil {
			return nil, err
		}
		return isDefinedPred{prop: prop}, nil
	case "eq", "lt", "gt", "lte", "gte", "like":
		return p.comparison(e)
	case "contains", "language-defined", "language-matches":
		return nil, fmt.Errorf("%w: DAV:%s", errSearchUnsupported, op)
	}
	return nil, fmt.Errorf("%w: unknown operator DAV:%s", errInvalidSearch, e.Name.Local)
}

// onlyProp reads the DAV:prop child of is-defined.
func (p *searchParser) onlyProp() (string, error) {
	var prop string
	n := 0
	err := p.children(func(e xml.StartElement) error {
		n++
		if e.Name.Local != "prop" {
			return fmt.Errorf("%w: DAV:%s where DAV:prop was expected", errInvalidSearch, e.Name.Local)
		}
		var err error
		prop, err = p.propName()
		return err
	})
	if err == nil && n != 1 {
		err = fmt.Errorf("%w: is-defined wants one DAV:prop", errInvalidSearch)
	}
	return prop, err
}

// propName reads a DAV:prop holding one searchable property.
func (p *searchParser) propName() (string, error) {
	names, err := readNames(p.nr)
	if err != nil {
		return "", err
	}
	if len(names) != 1 {
		return "", fmt.Errorf("%w: prop wants one property", errInvalidSearch)
	}
	n := names[0]
	if _, ok := propTypes[n.Local]; !ok || n.Space != nsDAV {
		return "", fmt.Errorf("%w: property {%s}%s is not searchable (displayname, getcontenttype, getlastmodified, creationdate, getcontentlength are)",
			errSearchUnsupported, n.Space, n.Local)
	}
	return n.Local, nil
}

// comparison reads eq, lt, gt, lte, gte or like: a prop and a literal.
func (p *searchParser) comparison(e xml.StartElement) (predicate, error) {
	op := e.Name.Local
	caseless := true
	for _, a := range e.Attr {
		if a.Name.Local == "caseless" && a.Name.Space == "" {
			caseless = a.Value != "no"
		}
	}
	var prop, lit string
	var hasProp, hasLit bool
	err := p.children(func(e xml.StartElement) error {
		var err error
		switch e.Name.Local {
		case "prop":
			if hasProp {
				return fmt.Errorf("%w: %s wants one prop", errInvalidSearch, op)
			}
			prop, err = p.propName()
			hasProp = true
		case "literal", "typed-literal":
			if hasLit {
				return fmt.Errorf("%w: %s wants one literal", errInvalidSearch, op)
			}
			lit, err = p.text()
			hasLit = true
		default:
			err = fmt.Errorf("%w: DAV:%s in %s", errInvalidSearch, e.Name.Local, op)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !hasProp || !hasLit {
		return nil, fmt.Errorf("%w: %s wants a prop and a literal", errInvalidSearch, op)
	}
	t := propTypes[prop]
	if op == "like" {
		if t != typeString {
			return nil, fmt.Errorf("%w: like on %s, which is not a string", errSearchUnsupported, prop)
		}
		pat, err := parseLike(lit)
		if err != nil {
			return nil, err
		}
		return likePred{prop: prop, pat: pat}, nil
	}
	c := cmpPred{op: op, prop: prop, caseless: caseless}
	switch t {
	case typeString:
		c.str = lit
	case typeInt:
		n, err := strconv.ParseInt(strings.TrimSpace(lit), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: %s wants an integer, not %q", errInvalidSearch, prop, clip(lit))
		}
		c.num = n
	case typeDate:
		when, err := parseSearchTime(lit)
		if err != nil {
			return nil, fmt.Errorf("%w: %s wants a date, not %q", errInvalidSearch, prop, clip(lit))
		}
		c.when = when
	}
	return c, nil
}

// parseSearchTime reads a date literal in the forms clients send: RFC 3339
// (creationdate's form, and what the Nextcloud apps send for "modified in
// the last week"), the HTTP date of getlastmodified, or Unix seconds (the
// apps' paging timestamps). Dates compare to the second, as getlastmodified
// shows them.
func parseSearchTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0).UTC(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", http1123} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Truncate(time.Second), nil
		}
	}
	return time.Time{}, errors.New("not a date")
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"

func (p *searchParser) orderby(req *searchReq) error {
	return p.children(func(e xml.StartElement) error {
		if e.Name.Local != "order" {
			return fmt.Errorf("%w: DAV:%s in orderby", errInvalidSearch, e.Name.Local)
		}
		var o searchOrder
		score, hasProp := false, false
		err := p.children(func(e xml.StartElement) error {
			var err error
			switch e.Name.Local {
			case "prop":
				o.prop, err = p.propName()
				hasProp = true
			case "score":
				// No relevance here: every hit matches as well as another,
				// so ordering by score leaves the order as it is.
				score = true
				err = p.nr.skip()
			case "ascending":
				err = p.nr.skip()
			case "descending":
				o.desc = true
				err = p.nr.skip()
			default:
				err = fmt.Errorf("%w: DAV:%s in order", errInvalidSearch, e.Name.Local)
			}
			return err
		})
		if err != nil {
			return err
		}
		if hasProp == score {
			return fmt.Errorf("%w: order wants a prop or score", errInvalidSearch)
		}
		if hasProp {
			req.order = append(req.order, o)
		}
		return nil
	})
}

func (p *searchParser) limit(req *searchReq) error {
	seen := false
	err := p.children(func(e xml.StartElement) error {
		if e.Name.Local != "nresults" || seen {
			return fmt.Errorf("%w: limit wants one DAV:nresults", errInvalidSearch)
		}
		seen = true
		s, err := p.text()
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("%w: nresults %q is not a positive integer", errInvalidSearch, clip(s))
		}
		req.limit, req.capped = min(n, MaxSearchResults), n > MaxSearchResults
		return nil
	})
	if err == nil && !seen {
		err = fmt.Errorf("%w: limit wants DAV:nresults", errInvalidSearch)
	}
	return err
}

// clip shortens text quoted in an error to one short line.
func clip(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
