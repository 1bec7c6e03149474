package dav

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// searchBody builds a basicsearch body: where is the inner XML of
// DAV:where ("" for none), extra goes after it (orderby, limit).
func searchBody(href, depth, where, extra string) string {
	w := ""
	if where != "" {
		w = "<d:where>" + where + "</d:where>"
	}
	d := ""
	if depth != "" {
		d = "<d:depth>" + depth + "</d:depth>"
	}
	return `<?xml version="1.0" encoding="UTF-8"?>
<d:searchrequest xmlns:d="DAV:"><d:basicsearch>
<d:select><d:prop><d:displayname/><d:getcontentlength/></d:prop></d:select>
<d:from><d:scope><d:href>` + href + `</d:href>` + d + `</d:scope></d:from>` + w + extra +
		`</d:basicsearch></d:searchrequest>`
}

func like(prop, lit string) string {
	return `<d:like><d:prop><d:` + prop + `/></d:prop><d:literal>` + lit + `</d:literal></d:like>`
}

func cmpOp(op, prop, lit string) string {
	return `<d:` + op + `><d:prop><d:` + prop + `/></d:prop><d:literal>` + lit + `</d:literal></d:` + op + `>`
}

// TestParseSearchRefuses: every malformed body is 400 (errInvalidSearch or
// the XML reader's error) and every well-formed query outside what is
// offered is 422 (errSearchUnsupported); none is accepted.
func TestParseSearchRefuses(t *testing.T) {
	deep := strings.Repeat("<d:not>", 40) + "<d:is-collection/>" + strings.Repeat("</d:not>", 40)
	many := "<d:or>" + strings.Repeat("<d:is-collection/>", maxSearchOperators+1) + "</d:or>"
	for _, c := range []struct {
		name, body  string
		unsupported bool
	}{
		{"empty", "", false},
		{"not xml", "SELECT * FROM files", false},
		{"unclosed", `<d:searchrequest xmlns:d="DAV:"><d:basicsearch>`, false},
		{"undeclared prefix", `<x:searchrequest/>`, false},
		{"wrong root", `<d:propfind xmlns:d="DAV:"><d:allprop/></d:propfind>`, false},
		{"no grammar", `<d:searchrequest xmlns:d="DAV:"/>`, false},
		{"other grammar", `<d:searchrequest xmlns:d="DAV:"><d:sql>select</d:sql></d:searchrequest>`, true},
		{"two roots", searchBody("/dav/", "", "", "") + "<d:x xmlns:d='DAV:'/>", false},
		{"no select", `<d:searchrequest xmlns:d="DAV:"><d:basicsearch><d:from><d:scope><d:href>/dav/</d:href></d:scope></d:from></d:basicsearch></d:searchrequest>`, false},
		{"no from", `<d:searchrequest xmlns:d="DAV:"><d:basicsearch><d:select><d:allprop/></d:select></d:basicsearch></d:searchrequest>`, false},
		{"no href", strings.Replace(searchBody("/dav/", "", "", ""), "<d:href>/dav/</d:href>", "", 1), false},
		{"two scopes", strings.Replace(searchBody("/dav/", "", "", ""), "</d:from>", "<d:scope><d:href>/dav/a</d:href></d:scope></d:from>", 1), true},
		{"bad depth", searchBody("/dav/", "2", "", ""), false},
		{"two wheres", searchBody("/dav/", "", "<d:is-collection/>", "<d:where><d:is-collection/></d:where>"), false},
		{"empty where", searchBody("/dav/", "", "", "<d:where/>"), false},
		{"two operators", searchBody("/dav/", "", "<d:is-collection/><d:is-collection/>", ""), false},
		{"unknown operator", searchBody("/dav/", "", "<d:matches/>", ""), false},
		{"empty and", searchBody("/dav/", "", "<d:and/>", ""), false},
		{"not of two", searchBody("/dav/", "", "<d:not><d:is-collection/><d:is-collection/></d:not>", ""), false},
		{"text in where", searchBody("/dav/", "", "<d:and>name = 'x'</d:and>", ""), false},
		{"contains", searchBody("/dav/", "", "<d:contains>report</d:contains>", ""), true},
		{"favorite", searchBody("/dav/", "", `<d:eq><d:prop><oc:favorite xmlns:oc="http://owncloud.org/ns"/></d:prop><d:literal>yes</d:literal></d:eq>`, ""), true},
		{"resourcetype compared", searchBody("/dav/", "", cmpOp("eq", "resourcetype", "x"), ""), true},
		{"like on a date", searchBody("/dav/", "", like("getlastmodified", "2024%"), ""), true},
		{"two props", searchBody("/dav/", "", `<d:eq><d:prop><d:displayname/><d:getcontenttype/></d:prop><d:literal>x</d:literal></d:eq>`, ""), false},
		{"no literal", searchBody("/dav/", "", `<d:eq><d:prop><d:displayname/></d:prop></d:eq>`, ""), false},
		{"two literals", searchBody("/dav/", "", `<d:eq><d:prop><d:displayname/></d:prop><d:literal>a</d:literal><d:literal>b</d:literal></d:eq>`, ""), false},
		{"element in literal", searchBody("/dav/", "", `<d:eq><d:prop><d:displayname/></d:prop><d:literal><d:b/></d:literal></d:eq>`, ""), false},
		{"size not a number", searchBody("/dav/", "", cmpOp("gt", "getcontentlength", "big"), ""), false},
		{"not a date", searchBody("/dav/", "", cmpOp("gt", "getlastmodified", "yesterday"), ""), false},
		{"like ends in escape", searchBody("/dav/", "", like("displayname", `a\`), ""), false},
		{"nresults zero", searchBody("/dav/", "", "", "<d:limit><d:nresults>0</d:nresults></d:limit>"), false},
		{"nresults text", searchBody("/dav/", "", "", "<d:limit><d:nresults>all</d:nresults></d:limit>"), false},
		{"limit empty", searchBody("/dav/", "", "", "<d:limit/>"), false},
		{"order without prop", searchBody("/dav/", "", "", "<d:orderby><d:order><d:descending/></d:order></d:orderby>"), false},
		{"order on quota", searchBody("/dav/", "", "", "<d:orderby><d:order><d:prop><d:quota-used-bytes/></d:prop></d:order></d:orderby>"), true},
		{"nested too deep", searchBody("/dav/", "", deep, ""), false},
		{"too many operators", searchBody("/dav/", "", many, ""), false},
		{"unknown basicsearch child", searchBody("/dav/", "", "", "<d:groupby/>"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := parseSearch([]byte(c.body))
			if err == nil {
				t.Fatal("accepted")
			}
			if got := errors.Is(err, errSearchUnsupported); got != c.unsupported {
				t.Errorf("unsupported = %v, want %v (%v)", got, c.unsupported, err)
			}
			if strings.ContainsAny(err.Error(), "\n") {
				t.Errorf("message is not one line: %q", err)
			}
		})
	}
}

func TestParseSearchReads(t *testing.T) {
	body := `<?xml version="1.0"?>
<searchrequest xmlns="DAV:" xmlns:nc="http://nextcloud.org/ns"><basicsearch>
 <select><allprop/></select>
 <from><scope><href>/dav/a%20b/</href><depth>1</depth></scope></from>
 <where><and><not><is-collection/></not><eq caseless="no"><prop><displayname/></prop><typed-literal>X</typed-literal></eq></and></where>
 <orderby><order><prop><getcontentlength/></prop><descending/></order><order><score/></order><order><prop><displayname/></prop><ascending/></order></orderby>
 <limit><nresults>5000</nresults><nc:firstresult>0</nc:firstresult></limit>
</basicsearch></searchrequest>`
	req, err := parseSearch([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []searchOrder{{prop: "getcontentlength", desc: true}, {prop: "displayname"}}
	if req.sel.mode != modeAllProp || req.href != "/dav/a%20b/" || req.depth != 1 || !slices.Equal(req.order, want) ||
		req.limit != MaxSearchResults || !req.capped {
		t.Fatalf("parsed %+v", req)
	}
	a, ok := req.where.(andPred)
	if !ok || len(a) != 2 {
		t.Fatalf("where %#v", req.where)
	}
	if c, ok := a[1].(cmpPred); !ok || c.caseless || c.str != "X" {
		t.Fatalf("eq %#v", a[1])
	}
}

func TestLikeMatch(t *testing.T) {
	for _, c := range []struct {
		pat, s string
		want   bool
	}{
		{"%", "", true}, {"%", "anything", true}, {"", "", true}, {"", "a", false},
		{"%report%", "Q3 Report.pdf", true}, {"%report%", "repor", false},
		{"a_c", "abc", true}, {"a_c", "ac", false}, {"a_c", "abbc", false},
		{"%.jpg", "x.JPG", true}, {"%.jpg", "x.jpg.txt", false},
		{"img\\_%", "img_1", true}, {"img\\_%", "imgx1", false},
		{"100\\%%", "100% done", true}, {"100\\%%", "1000", false},
		{"%a%b%c%", "xaybzc", true}, {"%a%b%c%", "cba", false},
		{"_", "é", true}, {"é%", "École", true}, {"e%", "École", false}, {"é%", "été", true},
		{"%*%", "a*b", true}, {"%*%", "ab", false},
		{strings.Repeat("%a", 30) + "b", strings.Repeat("a", 200), false},
	} {
		toks, err := parseLike(c.pat)
		if err != nil {
			t.Fatal(err)
		}
		if got := likeMatch(toks, []rune(strings.ToLower(c.s))); got != c.want {
			t.Errorf("like(%q, %q) = %v, want %v", c.pat, c.s, got, c.want)
		}
	}
}

func TestNamePattern(t *testing.T) {
	for _, c := range []struct {
		like, pattern string
		glob, ok      bool
	}{
		{"%report%", "report", false, true},
		{"report%", "report*", true, true},
		{"%.jpg", "*.jpg", true, true},
		{"img_%.png", "img?*.png", true, true},
		{"exact", "exact", true, true},
		{"%", "*", true, false},
		{"%_%", "*", true, false},
		{"%a*b%", "a", false, true},
		{"%what?%", "what", false, true},
		{"%*%", "*", true, false},
	} {
		toks, _ := parseLike(c.like)
		p, g, ok := namePattern(toks)
		if p != c.pattern || g != c.glob || ok != c.ok {
			t.Errorf("namePattern(%q) = %q %v %v, want %q %v %v", c.like, p, g, ok, c.pattern, c.glob, c.ok)
		}
	}
}

// searchEnv is a drive with alice's files at known times and sizes, and one
// file of bob's whose name matches everything alice searches for.
func searchEnv(t *testing.T) *lockEnv {
	e := startLockEnv(t)
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/docs", "")
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/docs/reports", "")
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/photos", "")
	base := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC).Unix()
	for i, f := range []struct{ path, body string }{
		{"/dav/docs/Report-2023.pdf", "aaaa"},
		{"/dav/docs/reports/q1%20report.txt", "a"},
		{"/dav/docs/notes.txt", "aaaaaaaa"},
		{"/dav/photos/IMG_0001.jpg", "aa"},
		{"/dav/photos/img_0002.JPG", "aaa"},
		{"/dav/photos/holiday%20100%25.png", "aaaaa"},
		{"/dav/readme.md", "aaaaaa"},
	} {
		// Each file a day newer than the one before.
		e.want(http.StatusCreated, "alice", "PUT", f.path, f.body, fmt.Sprintf("X-OC-Mtime: %d", base+int64(i)*86400))
	}
	e.want(http.StatusCreated, "bob", "PUT", "/dav/report-bob.pdf", "b")
	return e
}

var hrefRE = regexp.MustCompile(`<D:href>([^<]*)</D:href>`)

// hrefs returns the hrefs of a multistatus, in order.
func hrefs(body string) []string {
	var out []string
	for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestSearchWhere runs the whole class of predicates against a real drive
// and checks the exact answer, order included.
func TestSearchWhere(t *testing.T) {
	e := searchEnv(t)
	mar := func(day int) string { return time.Date(2024, 3, day, 0, 0, 0, 0, time.UTC).Format(time.RFC3339) }
	byName := `<d:orderby><d:order><d:prop><d:displayname/></d:prop><d:ascending/></d:order></d:orderby>`
	for _, c := range []struct {
		name, href, depth, where, extra string
		want                            []string
	}{
		{"substring, newest first", "/dav/", "", like("displayname", "%report%"), "",
			[]string{"/dav/docs/reports/q1%20report.txt", "/dav/docs/Report-2023.pdf", "/dav/docs/reports/"}},
		{"nextcloud scope form", "/files/alice", "infinity", like("displayname", "%report%"), "",
			[]string{"/dav/docs/reports/q1%20report.txt", "/dav/docs/Report-2023.pdf", "/dav/docs/reports/"}},
		{"files only", "/dav/", "", `<d:and><d:not><d:is-collection/></d:not>` + like("displayname", "%report%") + `</d:and>`, "",
			[]string{"/dav/docs/reports/q1%20report.txt", "/dav/docs/Report-2023.pdf"}},
		{"folders only", "/dav/", "", `<d:and><d:is-collection/>` + like("displayname", "%o%") + `</d:and>`, byName,
			[]string{"/dav/docs/", "/dav/photos/", "/dav/docs/reports/"}},
		{"suffix glob, any case", "/dav/", "", like("displayname", "%.jpg"), byName,
			[]string{"/dav/photos/IMG_0001.jpg", "/dav/photos/img_0002.JPG"}},
		{"underscore and escape", "/dav/", "", like("displayname", `img\_000_.jpg`), "",
			[]string{"/dav/photos/img_0002.JPG", "/dav/photos/IMG_0001.jpg"}},
		{"percent literal", "/dav/", "", like("displayname", `%100\%%`), "",
			[]string{"/dav/photos/holiday%20100%25.png"}},
		{"eq caseless", "/dav/", "", cmpOp("eq", "displayname", "README.MD"), "", []string{"/dav/readme.md"}},
		{"eq case-sensitive", "/dav/", "", `<d:eq caseless="no"><d:prop><d:displayname/></d:prop><d:literal>README.MD</d:literal></d:eq>`, "", nil},
		{"or of names", "/dav/", "", `<d:or>` + like("displayname", "notes%") + like("displayname", "readme%") + `</d:or>`, "",
			[]string{"/dav/readme.md", "/dav/docs/notes.txt"}},
		{"content type", "/dav/", "", like("getcontenttype", "image/%"), byName,
			[]string{"/dav/photos/holiday%20100%25.png", "/dav/photos/IMG_0001.jpg", "/dav/photos/img_0002.JPG"}},
		{"not content type, folders unknown", "/dav/", "", `<d:not>` + like("getcontenttype", "image/%") + `</d:not>`, byName,
			[]string{"/dav/docs/notes.txt", "/dav/docs/reports/q1%20report.txt", "/dav/readme.md", "/dav/docs/Report-2023.pdf"}},
		{"size range", "/dav/", "", `<d:and>` + cmpOp("gte", "getcontentlength", "3") + cmpOp("lt", "getcontentlength", "6") + `</d:and>`,
			`<d:orderby><d:order><d:prop><d:getcontentlength/></d:prop><d:descending/></d:order></d:orderby>`,
			[]string{"/dav/photos/holiday%20100%25.png", "/dav/docs/Report-2023.pdf", "/dav/photos/img_0002.JPG"}},
		{"modified after (RFC 3339)", "/dav/", "", `<d:and><d:not><d:is-collection/></d:not>` + cmpOp("gt", "getlastmodified", mar(5)) + `</d:and>`, "",
			[]string{"/dav/readme.md", "/dav/photos/holiday%20100%25.png"}},
		{"modified between (unix, gte/lte)", "/dav/", "", `<d:and>` +
			cmpOp("gte", "getlastmodified", fmt.Sprint(time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC).Unix())) +
			cmpOp("lte", "getlastmodified", "Mon, 04 Mar 2024 00:00:00 GMT") + `</d:and>`, "",
			[]string{"/dav/photos/IMG_0001.jpg", "/dav/docs/notes.txt", "/dav/docs/reports/q1%20report.txt"}},
		{"modified on (eq)", "/dav/", "", cmpOp("eq", "getlastmodified", mar(1)), "", []string{"/dav/docs/Report-2023.pdf"}},
		{"is-defined length", "/dav/docs/", "1", `<d:is-defined><d:prop><d:getcontentlength/></d:prop></d:is-defined>`, byName,
			[]string{"/dav/docs/notes.txt", "/dav/docs/Report-2023.pdf"}},
		{"depth 1", "/dav/docs", "1", "", byName,
			[]string{"/dav/docs/notes.txt", "/dav/docs/Report-2023.pdf", "/dav/docs/reports/"}},
		{"depth 1, newest first", "/dav/docs", "1", "", "",
			[]string{"/dav/docs/notes.txt", "/dav/docs/Report-2023.pdf", "/dav/docs/reports/"}},
		{"depth 0", "/dav/docs/notes.txt", "0", "", "", []string{"/dav/docs/notes.txt"}},
		{"under a folder", "/dav/photos/", "", like("displayname", "%0%"), byName,
			[]string{"/dav/photos/holiday%20100%25.png", "/dav/photos/IMG_0001.jpg", "/dav/photos/img_0002.JPG"}},
		{"no where, limited", "/dav/", "", "", "<d:limit><d:nresults>2</d:nresults></d:limit>",
			[]string{"/dav/readme.md", "/dav/photos/holiday%20100%25.png"}},
		{"no name predicate, by name, limited", "/dav/", "", `<d:not><d:is-collection/></d:not>`, byName + "<d:limit><d:nresults>2</d:nresults></d:limit>",
			[]string{"/dav/photos/holiday%20100%25.png", "/dav/photos/IMG_0001.jpg"}},
		{"nothing", "/dav/", "", like("displayname", "%zzz%"), "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := e.do("alice", "SEARCH", "/dav/", searchBody(c.href, c.depth, c.where, c.extra), "Content-Type: text/xml")
			if r.status != http.StatusMultiStatus {
				t.Fatalf("status %d: %s", r.status, r.body)
			}
			if got := hrefs(r.body); !slices.Equal(got, c.want) {
				t.Errorf("hrefs\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestSearchScope: a scope outside the user's own tree is refused, the same
// way whether it names another user, nobody or another server, and nothing
// of bob's ever shows; bad input is a 4xx with one line, never a 500.
func TestSearchScope(t *testing.T) {
	e := searchEnv(t)
	all := like("displayname", "%report%")
	for _, c := range []struct {
		user, href string
		status     int
	}{
		{"bob", "/files/alice", http.StatusForbidden},
		{"bob", "/files/nobody", http.StatusForbidden},
		{"bob", "/files/", http.StatusForbidden},
		{"bob", "/other/alice", http.StatusForbidden},
		{"bob", "http://elsewhere.example/dav/", http.StatusForbidden},
		{"bob", "/dav/../../etc", http.StatusForbidden},
		{"bob", "/dav/a%00b", http.StatusBadRequest},
		{"bob", "/dav/%zz", http.StatusBadRequest},
		{"bob", "/dav/docs", http.StatusConflict}, // alice's folder; bob has none
		{"alice", "/dav/missing", http.StatusConflict},
		{"alice", "/dav/readme.md/x", http.StatusConflict},
	} {
		r := e.do(c.user, "SEARCH", "/dav/", searchBody(c.href, "", all, ""))
		if r.status != c.status || strings.Count(strings.TrimSpace(r.body), "\n") > 0 {
			t.Errorf("%s SEARCH scope %s: %d %q, want %d and one line", c.user, c.href, r.status, r.body, c.status)
		}
		if strings.Contains(r.body, "Report-2023") {
			t.Errorf("%s SEARCH scope %s leaks alice's file: %s", c.user, c.href, r.body)
		}
	}
	r := e.want(http.StatusMultiStatus, "bob", "SEARCH", "/dav/", searchBody("/files/bob", "", all, ""))
	if got := hrefs(r.body); !slices.Equal(got, []string{"/dav/report-bob.pdf"}) {
		t.Errorf("bob's search: %q", got)
	}
	for _, c := range []struct {
		body   string
		status int
	}{
		{"<d:searchrequest", http.StatusBadRequest},
		{searchBody("/dav/", "", "<d:contains>x</d:contains>", ""), http.StatusUnprocessableEntity},
		{searchBody("/dav/", "", cmpOp("gt", "getlastmodified", "soon"), ""), http.StatusBadRequest},
	} {
		r := e.do("alice", "SEARCH", "/dav/", c.body)
		if r.status != c.status || strings.Count(strings.TrimSpace(r.body), "\n") > 0 {
			t.Errorf("SEARCH %q: %d %q, want %d and one line", c.body, r.status, r.body, c.status)
		}
	}
}

// TestSearchAnswersAsPropfind: a result's response is byte for byte the one
// PROPFIND gives for the same properties, unknown ones included.
func TestSearchAnswersAsPropfind(t *testing.T) {
	e := searchEnv(t)
	e.want(http.StatusMultiStatus, "alice", "PROPPATCH", "/dav/docs/notes.txt",
		`<d:propertyupdate xmlns:d="DAV:"><d:set><d:prop><x:tag xmlns:x="urn:x">blue</x:tag></d:prop></d:set></d:propertyupdate>`)
	props := `<d:displayname/><d:getcontenttype/><d:getcontentlength/><d:getlastmodified/><d:getetag/><d:resourcetype/>` +
		`<d:quota-used-bytes/><oc:permissions xmlns:oc="http://owncloud.org/ns"/><x:tag xmlns:x="urn:x"/>`
	pf := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/dav/docs/notes.txt",
		`<d:propfind xmlns:d="DAV:"><d:prop>`+props+`</d:prop></d:propfind>`, "Depth: 0")
	body := strings.Replace(searchBody("/dav/", "", cmpOp("eq", "displayname", "notes.txt"), ""),
		"<d:prop><d:displayname/><d:getcontentlength/></d:prop>", "<d:prop>"+props+"</d:prop>", 1)
	s := e.want(http.StatusMultiStatus, "alice", "SEARCH", "/dav/", body)
	if pf.body != s.body || !strings.Contains(s.body, "blue") {
		t.Errorf("SEARCH answer differs from PROPFIND's:\n%s\n%s", s.body, pf.body)
	}
}

// TestSearchTruncated: a query the index cannot narrow reads at most
// SearchScan candidates and says it stopped with a 507 response for the
// scope (RFC 5323's number-of-matches-within-limits), rather than walking
// the whole drive; a query the index narrows is not cut.
func TestSearchTruncated(t *testing.T) {
	e := searchEnv(t)
	e.h.SearchScan = 3
	byName := `<d:orderby><d:order><d:prop><d:displayname/></d:prop></d:order></d:orderby>`
	r := e.want(http.StatusMultiStatus, "alice", "SEARCH", "/dav/", searchBody("/dav/", "", like("getcontenttype", "%/%"), byName))
	if !strings.Contains(r.body, "507 Insufficient Storage") || !strings.Contains(r.body, "<D:number-of-matches-within-limits/>") {
		t.Errorf("no truncation response: %s", r.body)
	}
	if n := len(hrefs(r.body)); n > 4 { // at most 3 results and the scope's 507
		t.Errorf("%d hrefs after reading 3 candidates: %s", n, r.body)
	}
	r = e.want(http.StatusMultiStatus, "alice", "SEARCH", "/dav/", searchBody("/dav/", "", like("displayname", "%.jpg"), byName))
	if strings.Contains(r.body, "507") || len(hrefs(r.body)) != 2 {
		t.Errorf("a narrow query was cut: %s", r.body)
	}
}

// TestOptionsAdvertisesSearch: the Nextcloud apps search only where OPTIONS
// lists SEARCH in Allow; DASL names the grammar (RFC 5323 §3).
func TestOptionsAdvertisesSearch(t *testing.T) {
	e := searchEnv(t)
	for _, p := range []string{"/dav/", "/dav/readme.md", "/dav/missing"} {
		r := e.want(http.StatusOK, "alice", "OPTIONS", p, "")
		if r.hdr.Get("DASL") != "<DAV:basicsearch>" || !strings.Contains(r.hdr.Get("Allow"), "SEARCH") ||
			strings.Contains(r.hdr.Get("Allow"), "POST") || r.hdr.Get("DAV") != "1, 2" {
			t.Errorf("OPTIONS %s: %v", p, r.hdr)
		}
	}
}
