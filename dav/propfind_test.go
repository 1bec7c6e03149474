package dav_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netdisk/client"
	"netdisk/meta"
	"netdisk/testutil"
)

// propEnv is a real daemon spoken to as admin over HTTP.
type propEnv struct {
	t *testing.T
	d *testutil.Daemon
	c *http.Client
}

func startPropEnv(t *testing.T) *propEnv {
	t.Helper()
	d := testutil.StartDaemon(t)
	tr := &http.Transport{MaxIdleConnsPerHost: 4}
	t.Cleanup(tr.CloseIdleConnections)
	return &propEnv{t: t, d: d, c: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// send sends one request as admin, bounded by a minute; the caller reads
// and closes the body, then calls cancel.
func (e *propEnv) send(method, path string, body []byte, hdr map[string]string) (*http.Response, context.CancelFunc) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	r, err := http.NewRequestWithContext(ctx, method, e.d.URL+path, rd)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	r.SetBasicAuth("admin", e.d.AdminPass)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	resp, err := e.c.Do(r)
	if err != nil {
		cancel()
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp, cancel
}

// req sends one request as admin and returns the status and body.
func (e *propEnv) req(method, path string, body []byte, hdr map[string]string) (int, string) {
	e.t.Helper()
	resp, cancel := e.send(method, path, body, hdr)
	defer cancel()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp.StatusCode, string(b)
}

func (e *propEnv) must(want int, method, path string, body []byte, hdr map[string]string) string {
	e.t.Helper()
	st, b := e.req(method, path, body, hdr)
	if st != want {
		e.t.Fatalf("%s %s: %d %.300s, want %d", method, path, st, b, want)
	}
	return b
}

// multistatus is the part of a 207 body the tests look at.
type multistatus struct {
	Responses []struct {
		Href      string `xml:"href"`
		Propstats []struct {
			Prop struct {
				Inner []byte `xml:",innerxml"`
			} `xml:"prop"`
			Status string `xml:"status"`
		} `xml:"propstat"`
	} `xml:"response"`
}

func parseMS(t *testing.T, body string) multistatus {
	t.Helper()
	var ms multistatus
	if err := xml.Unmarshal([]byte(body), &ms); err != nil {
		t.Fatalf("207 body is not XML: %v\n%.500s", err, body)
	}
	return ms
}

func (ms multistatus) hrefs() []string {
	var out []string
	for _, r := range ms.Responses {
		out = append(out, r.Href)
	}
	return out
}

// fillTree writes n empty files below /dir straight into the daemon's SQLite
// file in one transaction (WAL lets a second process write beside the
// daemon): creating 10,000 entries over HTTP would cost a commit each.
func fillTree(t testing.TB, d *testutil.Daemon, dir string, n int) {
	t.Helper()
	ctx := context.Background()
	m, err := meta.OpenSQLite(ctx, filepath.Join(d.DataDir, "meta.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	u, err := m.UserByName(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Mkdir(ctx, u.ID, dir, time.Now()); err != nil {
		t.Fatal(err)
	}
	err = m.Tx(ctx, func(tx *meta.Tx) error {
		f := meta.NewFile{FileHash: "d41d8cd98f00b204e9800998ecf8427e", ModTime: time.Now()}
		for i := range n {
			p := fmt.Sprintf("%s/file-%05d.txt", dir, i)
			if _, _, err := m.CommitFileTx(ctx, tx, u.ID, p, f, meta.NoGrowthLimit); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestPropfindDepths(t *testing.T) {
	e := startPropEnv(t)
	e.must(201, "MKCOL", "/dav/a", nil, nil)
	e.must(201, "MKCOL", "/dav/a/b", nil, nil)
	e.must(201, "PUT", "/dav/a/b/f%20x.txt", []byte("hello"), nil)
	e.must(201, "PUT", "/dav/a/g.txt", []byte("hi"), nil)

	want := map[string][]string{
		"0":        {"/dav/a/"},
		"1":        {"/dav/a/", "/dav/a/b/", "/dav/a/g.txt"},
		"infinity": {"/dav/a/", "/dav/a/b/", "/dav/a/b/f%20x.txt", "/dav/a/g.txt"},
		"":         {"/dav/a/", "/dav/a/b/", "/dav/a/b/f%20x.txt", "/dav/a/g.txt"}, // missing Depth is infinity
	}
	for depth, hrefs := range want {
		hdr := map[string]string{}
		if depth != "" {
			hdr["Depth"] = depth
		}
		got := parseMS(t, e.must(207, "PROPFIND", "/dav/a", nil, hdr)).hrefs()
		if fmt.Sprint(got) != fmt.Sprint(hrefs) {
			t.Errorf("Depth %q: hrefs %q, want %q", depth, got, hrefs)
		}
	}

	// Live properties of a file, never read from its content.
	body := e.must(207, "PROPFIND", "/dav/a/g.txt", []byte(`<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:prop>
		<D:getcontentlength/><D:getcontenttype/><D:getetag/><D:resourcetype/><D:nosuch/><x:y xmlns:x="urn:x"/></D:prop></D:propfind>`),
		map[string]string{"Depth": "0"})
	for _, s := range []string{"<D:getcontentlength>2</D:getcontentlength>", "<D:getcontenttype>text/plain; charset=utf-8</D:getcontenttype>",
		`<D:resourcetype/>`, "HTTP/1.1 404 Not Found", "<D:nosuch/>", `<y xmlns="urn:x"/>`} {
		if !strings.Contains(body, s) {
			t.Errorf("file PROPFIND lacks %q:\n%s", s, body)
		}
	}
	ms := parseMS(t, body)
	if len(ms.Responses) != 1 || len(ms.Responses[0].Propstats) != 2 {
		t.Fatalf("want one response with a 200 and a 404 propstat: %s", body)
	}

	// Quota properties on collections: used = the user's bytes and what
	// their entries cost.
	body = e.must(207, "PROPFIND", "/dav/", []byte(`<D:propfind xmlns:D="DAV:"><D:prop><D:quota-used-bytes/></D:prop></D:propfind>`),
		map[string]string{"Depth": "0"})
	q, err := client.New(e.d.URL, "admin", e.d.AdminPass).Quota(context.Background())
	if err != nil || q.Finished != 7 || q.Metadata <= 0 {
		t.Fatalf("quota: %+v %v, want 7 bytes of files and their entries' charge", q, err)
	}
	if want := fmt.Sprintf("<D:quota-used-bytes>%d</D:quota-used-bytes>", q.Finished+q.Metadata); !strings.Contains(body, want) {
		t.Errorf("quota-used-bytes, want %s: %s", want, body)
	}
}

func TestPropfindBadInput(t *testing.T) {
	e := startPropEnv(t)
	e.must(201, "MKCOL", "/dav/a", nil, nil)
	d0 := map[string]string{"Depth": "0"}
	for name, body := range testutil.InvalidXML(t) {
		if st, b := e.req("PROPFIND", "/dav/a", body, d0); st != http.StatusBadRequest {
			t.Errorf("%s: %d %.200s, want 400", name, st, b)
		}
		if st, b := e.req("PROPPATCH", "/dav/a", body, nil); st != http.StatusBadRequest {
			t.Errorf("PROPPATCH %s: %d %.200s, want 400", name, st, b)
		}
	}
	if st, _ := e.req("PROPFIND", "/dav/a", nil, map[string]string{"Depth": "2"}); st != http.StatusBadRequest {
		t.Errorf("Depth 2: %d, want 400", st)
	}
	// Oversized body: 413, whether announced or not.
	huge := []byte(`<D:propfind xmlns:D="DAV:"><D:prop>` + strings.Repeat(`<D:getetag/>`, 200000) + `</D:prop></D:propfind>`)
	if st, _ := e.req("PROPFIND", "/dav/a", huge, d0); st != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB PROPFIND body: %d, want 413", st)
	}
	if st, _ := e.req("PROPPATCH", "/dav/a", huge, nil); st != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB PROPPATCH body: %d, want 413", st)
	}
	// Encoded dot-dot in the request path never reaches another space.
	for _, p := range []string{"/dav/%2e%2e/api/v1/info", "/dav/a/%2E%2E/%2e%2e/x", "/dav/a/..%2f..%2fx"} {
		if st, b := e.req("PROPFIND", p, nil, d0); st != http.StatusBadRequest {
			t.Errorf("PROPFIND %s: %d %.200s, want 400", p, st, b)
		}
	}
	if st, _ := e.req("PROPFIND", "/dav/nosuch", nil, d0); st != http.StatusNotFound {
		t.Errorf("PROPFIND of a missing path: %d, want 404", st)
	}
}

func TestPropfindInfinityRefusedOnLargeTree(t *testing.T) {
	e := startPropEnv(t)
	fillTree(t, e.d, "/big", 10001)
	for _, hdr := range []map[string]string{{"Depth": "infinity"}, {}} {
		st, body := e.req("PROPFIND", "/dav/big", nil, hdr)
		if st != http.StatusForbidden || !strings.Contains(body, "<D:propfind-finite-depth/>") {
			t.Errorf("Depth infinity over 10,001 nodes (%v): %d %.300s, want 403 propfind-finite-depth", hdr, st, body)
		}
	}
	// Depth 1 of the same folder is served in full.
	ms := parseMS(t, e.must(207, "PROPFIND", "/dav/big/", nil, map[string]string{"Depth": "1"}))
	if len(ms.Responses) != 10002 {
		t.Errorf("Depth 1: %d responses, want 10002", len(ms.Responses))
	}
}

func TestDeadPropsRoundTrip(t *testing.T) {
	e := startPropEnv(t)
	e.must(201, "PUT", "/dav/p.txt", []byte("x"), nil)
	patch := `<?xml version="1.0" encoding="utf-8"?>
<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop>
  <t:title xmlns:t="urn:test" xml:lang="de">Grüße &amp; <t:b>fett</t:b></t:title>
  <plain xmlns="">no namespace</plain>
  <t:gone xmlns:t="urn:test">x</t:gone>
</D:prop></D:set>
<D:remove><D:prop><t:gone xmlns:t="urn:test"/></D:prop></D:remove>
</D:propertyupdate>`
	e.must(207, "PROPPATCH", "/dav/p.txt", []byte(patch), nil)
	body := e.must(207, "PROPFIND", "/dav/p.txt", []byte(`<D:propfind xmlns:D="DAV:"><D:prop><t:title xmlns:t="urn:test"/><plain xmlns=""/><t:gone xmlns:t="urn:test"/></D:prop></D:propfind>`),
		map[string]string{"Depth": "0"})
	// Decode with namespaces to check what a client sees.
	type title struct {
		XMLName xml.Name
		Lang    string `xml:"http://www.w3.org/XML/1998/namespace lang,attr"`
		Inner   string `xml:",innerxml"`
		B       string `xml:"urn:test b"`
	}
	var doc struct {
		Resp []struct {
			PS []struct {
				Prop struct {
					Title *title `xml:"urn:test title"`
					Plain string `xml:"plain"`
					Gone  *title `xml:"urn:test gone"`
				} `xml:"prop"`
				Status string `xml:"status"`
			} `xml:"propstat"`
		} `xml:"response"`
	}
	if err := xml.Unmarshal([]byte(body), &doc); err != nil || len(doc.Resp) != 1 || len(doc.Resp[0].PS) != 2 {
		t.Fatalf("PROPFIND: %v\n%s", err, body)
	}
	ok, missing := doc.Resp[0].PS[0], doc.Resp[0].PS[1]
	if ok.Prop.Title == nil || ok.Prop.Title.Lang != "de" || ok.Prop.Title.B != "fett" || !strings.Contains(ok.Prop.Title.Inner, "Grüße &amp; ") {
		t.Errorf("title did not round-trip: %+v\n%s", ok.Prop.Title, body)
	}
	if ok.Prop.Plain != "no namespace" {
		t.Errorf("no-namespace property: %q\n%s", ok.Prop.Plain, body)
	}
	if missing.Prop.Gone == nil || !strings.Contains(missing.Status, "404") {
		t.Errorf("set then removed in one PROPPATCH must be gone:\n%s", body)
	}
	// Protected live properties cannot be set, and nothing else in that
	// request is applied.
	st, b := e.req("PROPPATCH", "/dav/p.txt", []byte(`<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><D:getetag>"x"</D:getetag><t:new xmlns:t="urn:test">v</t:new></D:prop></D:set></D:propertyupdate>`), nil)
	if st != 207 || !strings.Contains(b, "403") {
		t.Errorf("PROPPATCH of getetag: %d %s", st, b)
	}
	body = e.must(207, "PROPFIND", "/dav/p.txt", []byte(`<D:propfind xmlns:D="DAV:"><D:prop><t:new xmlns:t="urn:test"/></D:prop></D:propfind>`), map[string]string{"Depth": "0"})
	if !strings.Contains(body, "404") {
		t.Errorf("a failed PROPPATCH applied part of itself:\n%s", body)
	}
	// allprop and propname list the dead properties too.
	body = e.must(207, "PROPFIND", "/dav/p.txt", nil, map[string]string{"Depth": "0"})
	if !strings.Contains(body, `<title xmlns="urn:test" xml:lang="de">`) || !strings.Contains(body, "<D:getetag>") {
		t.Errorf("allprop:\n%s", body)
	}
	body = e.must(207, "PROPFIND", "/dav/p.txt", []byte(`<D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>`), map[string]string{"Depth": "0"})
	if !strings.Contains(body, `<title xmlns="urn:test" xml:lang="de"/>`) || !strings.Contains(body, "<D:getetag/>") || strings.Contains(body, "fett") {
		t.Errorf("propname:\n%s", body)
	}
}

// TestHostileXMLOverHTTP: every XML body the daemon reads (PROPFIND,
// PROPPATCH, which x/net/webdav parses after our check, and LOCK) is
// answered quickly and without a server error, whatever testdata/xml holds:
// nesting past dav.MaxXMLDepth is refused with 400 naming it, entities are
// never expanded nor external ones read, and huge attribute or namespace
// counts cost one pass. Normal nested bodies still pass.
func TestHostileXMLOverHTTP(t *testing.T) {
	e := startPropEnv(t)
	e.must(201, "MKCOL", "/dav/a", nil, nil)
	// The method each body is written for, and the refusal it must get.
	refused := map[string]struct{ method, says string }{
		"deep-propfind.xml":  {"PROPFIND", "nested deeper"},
		"deep-proppatch.xml": {"PROPPATCH", "nested deeper"},
		"deep-lockinfo.xml":  {"LOCK", "nested deeper"},
		"xxe-propfind.xml":   {"PROPFIND", "entity"},
		"xxe-proppatch.xml":  {"PROPPATCH", "entity"},
		"billion-laughs.xml": {"PROPPATCH", "entity"},
	}
	bodies := testutil.HostileXML(t)
	for name := range refused {
		if bodies[name] == nil {
			t.Errorf("testdata/xml/%s is missing", name)
		}
	}
	for name, body := range bodies {
		for _, method := range []string{"PROPFIND", "PROPPATCH", "LOCK"} {
			start := time.Now()
			st, b := e.req(method, "/dav/a", body, map[string]string{"Depth": "0"})
			if d := time.Since(start); d > 2*time.Second { // generous: nesting took minutes
				t.Errorf("%s %s: %v", method, name, d)
			}
			if st >= 500 || strings.Contains(b, "root:") || strings.Contains(b, "lollol") {
				t.Errorf("%s %s: %d %.200s", method, name, st, b)
			}
			if r, ok := refused[name]; ok && r.method == method && (st != http.StatusBadRequest || !strings.Contains(b, r.says)) {
				t.Errorf("%s %s: %d %.200s, want 400 naming %q", method, name, st, b, r.says)
			}
		}
	}
	// A nested but legal dead property still round-trips.
	deep := `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><x:p xmlns:x="urn:x">` +
		strings.Repeat(`<x:n>`, 20) + `v` + strings.Repeat(`</x:n>`, 20) + `</x:p></D:prop></D:set></D:propertyupdate>`
	if b := e.must(207, "PROPPATCH", "/dav/a", []byte(deep), nil); !strings.Contains(b, "200 OK") {
		t.Fatalf("PROPPATCH within the limit: %.300s", b)
	}
}

// quota-used-bytes is what the user has (their files), not the bytes of an
// upload under way (seed 001 counts those apart); the open upload's declared
// size still counts against quota-available-bytes.
func TestQuotaPropsCountUploadsApart(t *testing.T) {
	e := startPropEnv(t)
	ctx := context.Background()
	c := client.New(e.d.URL, "admin", e.d.AdminPass)
	const total = 100 << 20
	if _, err := c.AdminSetQuota(ctx, "admin", total); err != nil {
		t.Fatal(err)
	}
	e.must(201, "PUT", "/dav/have.bin", bytes.Repeat([]byte("h"), 1000), nil)
	// An upload of 9 MiB under way, its first chunk received.
	const declared = 9 << 20
	s, err := c.Init(ctx, "/coming.bin", declared, "")
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("c"), int(s.ChunkSize))
	sum := md5.Sum(chunk)
	if err := c.UploadChunk(ctx, s.UploadID, 0, hex.EncodeToString(sum[:]), chunk); err != nil {
		t.Fatal(err)
	}
	if q, err := c.Quota(ctx); err != nil || q.Unfinished != s.ChunkSize {
		t.Fatalf("quota: %+v %v; want the chunk's bytes unfinished", q, err)
	}
	body := e.must(207, "PROPFIND", "/dav/", []byte(`<D:propfind xmlns:D="DAV:"><D:prop><D:quota-used-bytes/><D:quota-available-bytes/></D:prop></D:propfind>`),
		map[string]string{"Depth": "0"})
	q, err := c.Quota(ctx)
	if err != nil || q.Finished != 1000 || q.Metadata <= 0 {
		t.Fatalf("quota: %+v %v; want 1000 bytes of files and their entries' charge", q, err)
	}
	// Used is the files and what their entries cost; the upload is only
	// taken from what is available.
	used := q.Finished + q.Metadata
	for _, want := range []string{fmt.Sprintf("<D:quota-used-bytes>%d</D:quota-used-bytes>", used),
		fmt.Sprintf("<D:quota-available-bytes>%d</D:quota-available-bytes>", total-used-declared)} {
		if !strings.Contains(body, want) {
			t.Errorf("PROPFIND lacks %s:\n%s", want, body)
		}
	}
}
