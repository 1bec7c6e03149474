package dav

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"

	"netdisk/testutil"
)

// TestOddNamesOverWebDAV: every odd name of testdata/names.txt, escaped as a
// client escapes it, is created by PUT, listed by PROPFIND with an href that
// unescapes to the same name, and read back by GET.
func TestOddNamesOverWebDAV(t *testing.T) {
	e := startLockEnv(t)
	names := testutil.OddNames(t)
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/odd", "")
	for _, name := range names {
		e.want(http.StatusCreated, "alice", "PUT", "/dav/odd/"+url.PathEscape(name), name)
	}
	r := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/dav/odd/", "", "Depth: 1")
	var ms struct {
		Hrefs []string `xml:"response>href"`
	}
	if err := xml.Unmarshal([]byte(r.body), &ms); err != nil {
		t.Fatalf("PROPFIND body: %v", err)
	}
	var listed []string
	for _, h := range ms.Hrefs {
		p, err := url.PathUnescape(h)
		if err != nil {
			t.Fatalf("href %q: %v", h, err)
		}
		if p != "/dav/odd/" {
			listed = append(listed, path.Base(strings.TrimSuffix(p, "/")))
		}
	}
	slices.Sort(listed)
	if !slices.Equal(listed, names) {
		t.Fatalf("PROPFIND lists %q,\nwant %q", listed, names)
	}
	for _, name := range names {
		if got := e.want(http.StatusOK, "alice", "GET", "/dav/odd/"+url.PathEscape(name), "").body; got != name {
			t.Errorf("GET %q: %q", name, got)
		}
	}
}
