package dav

import (
	"errors"
	"strings"
)

// The If request header (RFC 4918 §10.4). We parse and evaluate it ourselves
// because x/net/webdav hands its conditions to a LockSystem that cannot see
// ETags, shared locks or other users, and it answers some requests before
// our lock table is consulted at all.

// ifHeader is a disjunction of lists: the header is true when any list is.
type ifHeader struct {
	lists []ifList
}

// ifList is a conjunction of conditions on one resource: Tag is the
// Resource-Tag as sent (an absolute URL or a path), "" for the Request-URI.
type ifList struct {
	Tag   string
	Conds []ifCond
}

// ifCond is one condition: a state token (Coded-URL without the angle
// brackets) or an entity tag (as sent, with quotes), possibly negated.
type ifCond struct {
	Not   bool
	Token string
	ETag  string
}

var errBadIf = errors.New("malformed If header")

// maxIfConds bounds the work one header can ask for: every condition may
// cost a lookup.
const maxIfConds = 256

// parseIf parses an If header value. It refuses a header mixing tagged and
// untagged lists, as the grammar does.
func parseIf(s string) (ifHeader, error) {
	p := ifParser{s: s}
	var h ifHeader
	tagged, untagged := false, false
	nconds := 0
	p.space()
	if p.eof() {
		return h, errBadIf
	}
	tag := ""
	for !p.eof() {
		switch p.peek() {
		case '<':
			t, ok := p.coded()
			if !ok {
				return h, errBadIf
			}
			tag, tagged = t, true
			p.space()
			if p.eof() || p.peek() != '(' {
				return h, errBadIf // a Resource-Tag needs at least one list
			}
		case '(':
			if !tagged {
				untagged = true
			}
			l, ok := p.list()
			if !ok {
				return h, errBadIf
			}
			l.Tag = tag
			nconds += len(l.Conds)
			if nconds > maxIfConds {
				return h, errBadIf
			}
			h.lists = append(h.lists, l)
		default:
			return h, errBadIf
		}
		if tagged && untagged {
			return h, errBadIf
		}
		p.space()
	}
	return h, nil
}

type ifParser struct {
	s string
	i int
}

func (p *ifParser) eof() bool  { return p.i >= len(p.s) }
func (p *ifParser) peek() byte { return p.s[p.i] }

func (p *ifParser) space() {
	for !p.eof() && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\r' || p.s[p.i] == '\n') {
		p.i++
	}
}

// coded reads "<...>" and returns what is inside.
func (p *ifParser) coded() (string, bool) {
	if p.eof() || p.peek() != '<' {
		return "", false
	}
	end := strings.IndexByte(p.s[p.i+1:], '>')
	if end < 0 {
		return "", false
	}
	v := p.s[p.i+1 : p.i+1+end]
	p.i += end + 2
	if v == "" || strings.ContainsAny(v, " \t<") {
		return "", false
	}
	return v, true
}

// list reads "(" 1*Condition ")".
func (p *ifParser) list() (ifList, bool) {
	var l ifList
	p.i++ // '('
	for {
		p.space()
		if p.eof() {
			return l, false
		}
		if p.peek() == ')' {
			p.i++
			return l, len(l.Conds) > 0
		}
		var c ifCond
		if strings.HasPrefix(p.s[p.i:], "Not") {
			c.Not = true
			p.i += 3
			p.space()
			if p.eof() {
				return l, false
			}
		}
		switch p.peek() {
		case '<':
			t, ok := p.coded()
			if !ok {
				return l, false
			}
			c.Token = t
		case '[':
			t, ok := p.etag()
			if !ok {
				return l, false
			}
			c.ETag = t
		default:
			return l, false
		}
		l.Conds = append(l.Conds, c)
	}
}

// etag reads "[" entity-tag "]"; the tag is a quoted string, optionally weak,
// and may itself contain ']'.
func (p *ifParser) etag() (string, bool) {
	p.i++ // '['
	start := p.i
	if strings.HasPrefix(p.s[p.i:], "W/") {
		p.i += 2
	}
	if p.eof() || p.peek() != '"' {
		return "", false
	}
	end := strings.IndexByte(p.s[p.i+1:], '"')
	if end < 0 {
		return "", false
	}
	p.i += end + 2
	if p.eof() || p.peek() != ']' {
		return "", false
	}
	t := p.s[start:p.i]
	p.i++
	return t, true
}

// ifEnv answers the questions evaluating a header asks about resources
// (cleaned paths inside the user's drive).
type ifEnv interface {
	// resolve maps a Resource-Tag to a path; false when it names nothing of
	// this user's drive (another host, outside the prefix, malformed).
	resolve(tag string) (string, bool)
	// tokenHolds reports whether token is a live lock of this user whose
	// scope includes name.
	tokenHolds(token, name string) bool
	// etag returns the resource's current entity tag, false when it does not exist.
	etag(name string) (string, bool)
}

// eval reports whether the header holds for a request on reqPath: any list
// whose conditions all hold.
func (h ifHeader) eval(reqPath string, env ifEnv) bool {
	for _, l := range h.lists {
		name := reqPath
		if l.Tag != "" {
			var ok bool
			if name, ok = env.resolve(l.Tag); !ok {
				continue
			}
		}
		if l.holds(name, env) {
			return true
		}
	}
	return false
}

func (l ifList) holds(name string, env ifEnv) bool {
	for _, c := range l.Conds {
		var v bool
		if c.ETag != "" {
			cur, ok := env.etag(name)
			v = ok && etagEqual(cur, c.ETag)
		} else {
			// Unknown tokens (DAV:no-lock, corrupt or expired ones, other
			// users') simply do not hold.
			v = env.tokenHolds(c.Token, name)
		}
		if v == c.Not {
			return false
		}
	}
	return true
}

// tokens returns the state tokens a request submits (not negated), whatever
// list they are in: RFC 4918 §10.4.1 counts a token as submitted when it
// appears in the header, even in a list that turns out false.
func (h ifHeader) tokens() []string {
	var out []string
	for _, l := range h.lists {
		for _, c := range l.Conds {
			if c.Token != "" && !c.Not {
				out = append(out, c.Token)
			}
		}
	}
	return out
}

// etagEqual is the weak comparison: W/ prefixes are ignored.
func etagEqual(a, b string) bool {
	return strings.TrimPrefix(a, "W/") == strings.TrimPrefix(b, "W/")
}
