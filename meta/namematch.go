package meta

import (
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name search compares names case-insensitively by Unicode simple case
// folding (the orbit of unicode.SimpleFold: É/é, Σ/σ/ς, Д/д, …), with one
// exception: a non-ASCII letter never matches an ASCII one (the Kelvin sign
// K is not k, the long s ſ is not s, the dotted İ is not i). The exception
// is what lets the databases' own ASCII-only lower() build the index: a
// name's indexed grams fold exactly ASCII, so a pattern's gram made of
// ASCII letters and of characters with no other case form finds every name
// that matches it, and a gram with a cased non-ASCII letter is left out of
// the index look-up (the exact comparison below still decides).

// foldRune is the rune every member of r's case orbit compares as.
func foldRune(r rune) rune {
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < m {
			m = f
		}
	}
	if r >= utf8.RuneSelf && m < utf8.RuneSelf {
		return r
	}
	return m
}

// foldName folds every rune of s (foldRune).
func foldName(s string) string {
	return strings.Map(foldRune, s)
}

// indexable reports whether the index's ASCII-only folding sees every case
// form of r: r is ASCII, or r has no other case form.
func indexable(r rune) bool {
	return r < utf8.RuneSelf || unicode.SimpleFold(r) == r
}

// asciiLower is the databases' lower(): ASCII letters only.
func asciiLower(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}

// nameMatcher decides whether a name matches a search pattern exactly.
type nameMatcher struct {
	glob    bool
	pattern []rune // folded; in glob mode '*' and '?' are wildcards
	sub     string // folded pattern, substring mode
}

func newNameMatcher(pattern string, glob bool) nameMatcher {
	f := foldName(pattern)
	return nameMatcher{glob: glob, pattern: []rune(f), sub: f}
}

func (m nameMatcher) match(name string) bool {
	f := foldName(name)
	if !m.glob {
		return strings.Contains(f, m.sub)
	}
	return globMatch(m.pattern, []rune(f))
}

// globMatch matches the whole of s against p, where '*' is any run of
// runes (also none) and '?' exactly one; every other rune is literal. The
// usual linear walk: on a mismatch, go back to the last '*' and let it
// swallow one more rune.
func globMatch(p, s []rune) bool {
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || (p[pi] != '*' && p[pi] == s[si])):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			mark++
			pi, si = star+1, mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// gramEnd pads a name's end in the index: names never hold '/', so a gram
// ending in it marks the end of the name, and every position of a name,
// however short the name, starts a whole gram of three.
const gramEnd = "//"

// literalRuns returns the pattern's runs of literal runes: the whole
// pattern for a substring, the text between wildcards for a glob; a glob's
// last run is followed by gramEnd when the name must end with it.
func literalRuns(pattern string, glob bool) []string {
	if !glob {
		return []string{pattern}
	}
	runs := strings.FieldsFunc(pattern, func(r rune) bool { return r == '*' || r == '?' })
	if len(runs) > 0 && !strings.HasSuffix(pattern, "*") && !strings.HasSuffix(pattern, "?") {
		runs[len(runs)-1] += gramEnd
	}
	return runs
}

// ftsTerms returns the SQLite full-text terms every name matching pattern
// holds (so a query of any of them finds a superset of the matches), none
// when no part of the pattern can be looked up (the search then reads the
// user's nodes in time order). The index
// holds, for each name, the hex of every three-rune gram of
// lower(name)+gramEnd; a run of three runes or more is the grams it must
// hold, a shorter one a prefix of some gram.
func ftsTerms(pattern string, glob bool) []string {
	seen := map[string]bool{}
	var terms []string
	add := func(t string) {
		if !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	for _, run := range literalRuns(pattern, glob) {
		rs := []rune(run)
		for i := range rs {
			rs[i] = asciiLower(rs[i])
		}
		if len(rs) < 3 {
			if all(rs, indexable) {
				add(strings.ToUpper(hex.EncodeToString([]byte(string(rs)))) + "*")
			}
			continue
		}
		for i := 0; i+3 <= len(rs); i++ {
			g := rs[i : i+3]
			if all(g, indexable) {
				add(strings.ToUpper(hex.EncodeToString([]byte(string(g)))))
			}
		}
	}
	return terms
}

// likePattern returns the PostgreSQL LIKE pattern (ESCAPE '\') over
// lower(name) that finds a superset of the names matching pattern: ASCII
// folded as lower() folds, a cased non-ASCII letter as '_' (any one
// character: the exact comparison decides), LIKE's own '%', '_' and '\'
// escaped, a glob's '*' and '?' as '%' and '_'.
func likePattern(pattern string, glob bool) string {
	var b strings.Builder
	if !glob {
		b.WriteByte('%')
	}
	for _, r := range pattern {
		switch {
		case glob && r == '*':
			b.WriteByte('%')
		case glob && r == '?':
			b.WriteByte('_')
		case r == '%' || r == '_' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case !indexable(r):
			b.WriteByte('_')
		default:
			b.WriteRune(asciiLower(r))
		}
	}
	if !glob {
		b.WriteByte('%')
	}
	return b.String()
}

func all(rs []rune, f func(rune) bool) bool {
	for _, r := range rs {
		if !f(r) {
			return false
		}
	}
	return true
}
