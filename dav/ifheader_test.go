package dav

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseIf(t *testing.T) {
	tok := "opaquelocktoken:5d22eb1f-1355-4203-abf0-e1848064e05e"
	cases := []struct {
		in   string
		want []ifList
	}{
		{"(<" + tok + ">)", []ifList{{Conds: []ifCond{{Token: tok}}}}},
		{`(<` + tok + `> ["abc"]) (Not <DAV:no-lock> ["abc"])`, []ifList{
			{Conds: []ifCond{{Token: tok}, {ETag: `"abc"`}}},
			{Conds: []ifCond{{Not: true, Token: "DAV:no-lock"}, {ETag: `"abc"`}}},
		}},
		{"<http://h/dav/a> (<" + tok + ">)\r\n <http://h/dav/b> (Not[W/\"x]y\"])", []ifList{
			{Tag: "http://h/dav/a", Conds: []ifCond{{Token: tok}}},
			{Tag: "http://h/dav/b", Conds: []ifCond{{Not: true, ETag: `W/"x]y"`}}},
		}},
		{"</dav/a> (<a:b>) (<c:d>)", []ifList{
			{Tag: "/dav/a", Conds: []ifCond{{Token: "a:b"}}},
			{Tag: "/dav/a", Conds: []ifCond{{Token: "c:d"}}},
		}},
	}
	for _, c := range cases {
		h, err := parseIf(c.in)
		if err != nil {
			t.Errorf("parseIf(%q): %v", c.in, err)
			continue
		}
		if !reflect.DeepEqual(h.lists, c.want) {
			t.Errorf("parseIf(%q) = %+v, want %+v", c.in, h.lists, c.want)
		}
	}
	bad := []string{
		"", "   ", "()", "(", "(<a:b>", "<a:b>", "<http://h/x>", "(<a:b>) <http://h/x> (<c:d>)",
		"(<a:b>) junk", "([abc])", `(["abc")`, "(Not)", "(<>)", "(<a b>)", "(Nope <a:b>)",
		"(" + strings.Repeat("<a:b> ", maxIfConds+1) + ")",
	}
	for _, in := range bad {
		if h, err := parseIf(in); err == nil {
			t.Errorf("parseIf(%q) = %+v, want an error", in, h.lists)
		}
	}
}

// fakeEnv is a fixed world for evaluation: which tokens hold where, ETags.
type fakeEnv struct {
	locks map[string]string // token → path it holds on
	etags map[string]string
}

func (e fakeEnv) resolve(tag string) (string, bool) {
	p, ok := strings.CutPrefix(tag, "http://h/dav")
	return p, ok
}
func (e fakeEnv) tokenHolds(token, name string) bool { return e.locks[token] == name }
func (e fakeEnv) etag(name string) (string, bool) {
	v, ok := e.etags[name]
	return v, ok
}

func TestIfEval(t *testing.T) {
	env := fakeEnv{
		locks: map[string]string{"opaquelocktoken:a": "/f", "opaquelocktoken:b": "/g"},
		etags: map[string]string{"/f": `"e1"`, "/g": `"e2"`},
	}
	cases := []struct {
		hdr  string
		want bool
	}{
		{"(<opaquelocktoken:a>)", true},
		{"(<opaquelocktoken:b>)", false}, // holds, but on another resource
		{"(<opaquelocktoken:ax>)", false},
		{"(<DAV:no-lock>)", false},
		{"(Not <DAV:no-lock>)", true},
		{`(<opaquelocktoken:a> ["e1"])`, true},
		{`(<opaquelocktoken:a> [W/"e1"])`, true},
		{`(<opaquelocktoken:a> ["e2"])`, false},
		{`(<opaquelocktoken:a> ["bad"]) (Not <DAV:no-lock> ["bad"])`, false}, // litmus fail_complex_cond_put
		{`(<opaquelocktoken:a> ["e1"]) (Not <DAV:no-lock> ["e1"])`, true},    // complex_cond_put
		{`(<opaquelocktoken:zz>) (Not <DAV:no-lock>)`, true},                 // second list holds
		{`(Not <opaquelocktoken:a>)`, false},
		{`<http://h/dav/g> (<opaquelocktoken:b>)`, true},
		{`<http://h/dav/g> (<opaquelocktoken:a>)`, false},
		{`<http://other/dav/f> (<opaquelocktoken:a>)`, false}, // unresolvable tag
		{`<http://h/dav/g> (["e2"]) <http://h/dav/f> (["nope"])`, true},
		{`(["e1"])`, true},
		{`(["e1"] Not ["e1"])`, false},
		{`<http://h/dav/missing> (["e1"])`, false},
		{`<http://h/dav/missing> (Not ["e1"])`, true},
	}
	for _, c := range cases {
		h, err := parseIf(c.hdr)
		if err != nil {
			t.Fatalf("parseIf(%q): %v", c.hdr, err)
		}
		if got := h.eval("/f", env); got != c.want {
			t.Errorf("If: %s on /f = %v, want %v", c.hdr, got, c.want)
		}
	}
}

func TestIfTokens(t *testing.T) {
	h, err := parseIf(`<http://h/dav/x> (<a:1> ["e"]) (Not <a:2>) (<a:3>)`)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.tokens(); !reflect.DeepEqual(got, []string{"a:1", "a:3"}) {
		t.Errorf("tokens = %q, want a:1 a:3 (negated ones are not submitted)", got)
	}
}
