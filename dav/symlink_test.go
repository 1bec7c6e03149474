package dav_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/client"
)

// TestSymlinksOverWebDAV: a symbolic link shows as a small file whose body
// is its target, typed inode/symlink, with nd:symlink holding the target;
// WebDAV's verbs act on the link itself, never on what it names.
func TestSymlinksOverWebDAV(t *testing.T) {
	e := startPropEnv(t)
	ctx := context.Background()
	c := client.New(e.d.URL, "admin", e.d.AdminPass)
	e.must(201, "MKCOL", "/dav/d", nil, nil)
	e.must(201, "PUT", "/dav/d/f.txt", []byte("content"), nil)
	links := map[string]string{"/d/l": "f.txt", "/d/esc": "../../../../etc/passwd", "/d/amp": "a&b<c>"}
	for p, target := range links {
		if _, err := c.Symlink(ctx, p, target); err != nil {
			t.Fatal(err)
		}
	}

	// PROPFIND: a non-collection with the target's length, its type and
	// the marker property; allprop and by name alike.
	body := e.must(207, "PROPFIND", "/dav/d/", nil, map[string]string{"Depth": "1"})
	for _, r := range parseMS(t, body).Responses {
		inner := string(r.Propstats[0].Prop.Inner)
		switch r.Href {
		case "/dav/d/l":
			for _, want := range []string{`<symlink xmlns="urn:netdisk:dav">f.txt</symlink>`, "<D:getcontenttype>inode/symlink</D:getcontenttype>",
				"<D:getcontentlength>5</D:getcontentlength>", "<D:resourcetype/>"} {
				if !strings.Contains(inner, want) {
					t.Errorf("PROPFIND of the link lacks %s:\n%s", want, inner)
				}
			}
		case "/dav/d/amp":
			if !strings.Contains(inner, `<symlink xmlns="urn:netdisk:dav">a&amp;b&lt;c&gt;</symlink>`) {
				t.Errorf("nd:symlink not escaped:\n%s", inner)
			}
		case "/dav/d/f.txt":
			if strings.Contains(inner, "symlink") {
				t.Errorf("a file shows a link property:\n%s", inner)
			}
		}
	}
	byName := `<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:N="urn:netdisk:dav"><D:prop><N:symlink/></D:prop></D:propfind>`
	ms := parseMS(t, e.must(207, "PROPFIND", "/dav/d/esc", []byte(byName), map[string]string{"Depth": "0"}))
	if got := string(ms.Responses[0].Propstats[0].Prop.Inner); !strings.Contains(got, "../../../../etc/passwd") {
		t.Errorf("nd:symlink by name: %s", got)
	}
	ms = parseMS(t, e.must(207, "PROPFIND", "/dav/d/f.txt", []byte(byName), map[string]string{"Depth": "0"}))
	missing := false
	for _, ps := range ms.Responses[0].Propstats {
		missing = missing || strings.Contains(ps.Status, "404") && strings.Contains(string(ps.Prop.Inner), "symlink")
	}
	if !missing {
		t.Errorf("nd:symlink of a file is not 404: %+v", ms.Responses[0].Propstats)
	}

	// GET: the target as the body, never the content of what it names.
	resp, cancel := e.send("GET", "/dav/d/esc", nil, nil)
	b := make([]byte, 100)
	n, _ := resp.Body.Read(b)
	resp.Body.Close()
	cancel()
	if resp.StatusCode != 200 || string(b[:n]) != "../../../../etc/passwd" || resp.Header.Get("Content-Type") != "inode/symlink" ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("GET of a link: %d %q %v", resp.StatusCode, b[:n], resp.Header)
	}
	if got := e.must(206, "GET", "/dav/d/l", nil, map[string]string{"Range": "bytes=2-"}); got != "txt" {
		t.Fatalf("ranged GET of a link: %q", got)
	}

	// COPY copies the link; MOVE moves it; both keep it a link.
	e.must(201, "COPY", "/dav/d/l", nil, map[string]string{"Destination": "/dav/copy"})
	e.must(201, "COPY", "/dav/d/", nil, map[string]string{"Destination": "/dav/d2/"})
	e.must(201, "MOVE", "/dav/d/esc", nil, map[string]string{"Destination": "/dav/moved"})
	for p, want := range map[string]string{"/copy": "f.txt", "/d2/l": "f.txt", "/d2/esc": "../../../../etc/passwd", "/moved": "../../../../etc/passwd"} {
		n, err := c.Stat(ctx, p)
		if err != nil || n.Type != apitype.TypeSymlink || n.Target != want {
			t.Fatalf("%s after COPY/MOVE: %+v %v", p, n, err)
		}
	}

	// PROPPATCH cannot set a target: 403 for it, 424 for the rest.
	patch := `<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:N="urn:netdisk:dav" xmlns:Z="urn:x"><D:set><D:prop><N:symlink>/etc</N:symlink><Z:x>1</Z:x></D:prop></D:set></D:propertyupdate>`
	body = e.must(207, "PROPPATCH", "/dav/copy", []byte(patch), nil)
	if !strings.Contains(body, "403") || !strings.Contains(body, "424") || !strings.Contains(body, "cannot-modify-protected-property") {
		t.Fatalf("PROPPATCH of nd:symlink:\n%s", body)
	}
	if n, _ := c.Stat(ctx, "/copy"); n.Target != "f.txt" {
		t.Fatalf("PROPPATCH changed the target: %+v", n)
	}

	// DELETE removes the link, never its target.
	e.must(204, "DELETE", "/dav/d/l", nil, nil)
	if got := e.must(200, "GET", "/dav/d/f.txt", nil, nil); got != "content" {
		t.Fatalf("the target after DELETE of its link: %q", got)
	}
	e.must(404, "GET", "/dav/d/l", nil, nil)
	// A folder below a link is none: the link is never followed.
	e.must(409, "MKCOL", "/dav/copy/sub", nil, nil)
	e.must(409, "PUT", "/dav/copy/x.txt", []byte("x"), nil)

	// PUT over a link replaces the link with a file.
	e.must(204, "PUT", "/dav/copy", []byte("now a file"), nil)
	if n, err := c.Stat(ctx, "/copy"); err != nil || n.Type != apitype.TypeFile || n.Target != "" {
		t.Fatalf("PUT over a link: %+v %v", n, err)
	}
	if st, _ := e.req("GET", "/dav/copy", nil, nil); st != http.StatusOK {
		t.Fatalf("GET after PUT: %d", st)
	}
}
