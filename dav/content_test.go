package dav_test

import (
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"netdisk/dav"
)

// TestUserContentHeaders: every answer of /dav/ carries the sandbox CSP,
// nosniff and CORP, and every file whose type is not passive is a download,
// whatever its name, method (GET, HEAD), or range; POST serves nothing.
func TestUserContentHeaders(t *testing.T) {
	e := startPropEnv(t)
	page := []byte(`<html><body><script>fetch('/web/session')</script><svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/></body></html>`)
	files := []struct {
		name   string
		inline bool
	}{
		{"evil.html", false}, {"evil.HTM", false}, {"evil.Html", false}, {"evil.shtml", false},
		{"evil.svg", false}, {"evil.svgz", false}, {"evil.xhtml", false}, {"evil.xht", false},
		{"evil.xml", false}, {"evil.xsl", false}, {"evil.js", false}, {"evil.mjs", false},
		{"evil.css", false}, {"evil.pdf", false}, {"evil.swf", false}, {"evil.mht", false},
		{"evil.html.", false}, {"evil.html ", false}, {"evil.png.html", false}, {"evil", false},
		{"evil.weird", false}, {"evil.json", false}, {`q"uote;x=1.html`, false}, {"ünï ©.html", false},
		// Passive types stay inline: nosniff keeps HTML bytes in them inert.
		{"looks-like.png", true}, {"looks-like.txt", true}, {"looks-like.jpg", true}, {"looks-like.mp4", true},
	}
	for _, f := range files {
		e.must(201, "PUT", "/dav/"+escape(f.name), page, nil)
	}
	check := func(what string, hd http.Header, name string, inline bool) {
		t.Helper()
		if csp := hd.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") || !strings.Contains(csp, "default-src 'none'") {
			t.Errorf("%s: Content-Security-Policy %q", what, csp)
		}
		if v := hd.Get("X-Content-Type-Options"); v != "nosniff" {
			t.Errorf("%s: X-Content-Type-Options %q", what, v)
		}
		if v := hd.Get("Cross-Origin-Resource-Policy"); v != "same-origin" {
			t.Errorf("%s: Cross-Origin-Resource-Policy %q", what, v)
		}
		if name == "" {
			return
		}
		cd := hd.Get("Content-Disposition")
		if inline {
			if cd != "" {
				t.Errorf("%s: passive type %q is a download: %q", what, hd.Get("Content-Type"), cd)
			}
			return
		}
		disp, params, err := mime.ParseMediaType(cd)
		if err != nil || disp != "attachment" || params["filename"] != name {
			t.Errorf("%s: Content-Disposition %q (%v %q), want attachment named %q", what, cd, err, params["filename"], name)
		}
	}
	for _, f := range files {
		p := "/dav/" + escape(f.name)
		for _, c := range []struct {
			method string
			hdr    map[string]string
			status int
		}{
			{"GET", nil, 200},
			{"HEAD", nil, 200},
			{"GET", map[string]string{"Range": "bytes=0-5"}, 206},
			{"GET", map[string]string{"Range": "bytes=0-1,4-5"}, 206},
			{"GET", map[string]string{"Range": "bytes=9999-"}, 416},
		} {
			resp := e.raw(c.method, p, nil, c.hdr)
			what := c.method + " " + f.name + " " + c.hdr["Range"]
			if resp.StatusCode != c.status {
				t.Errorf("%s: %d, want %d", what, resp.StatusCode, c.status)
			}
			if c.status == 416 {
				check(what, resp.Header, "", false)
				continue
			}
			check(what, resp.Header, f.name, f.inline)
		}
	}
	// Answers that are not a file's content carry the protection too (an
	// error quotes the path the client chose).
	for _, c := range []struct{ method, path string }{
		{"GET", "/dav/" + escape("<script>x</script>.html")},
		{"GET", "/dav/"},
		{"PROPFIND", "/dav/"},
		{"MKCOL", "/dav/evil.html"},
		{"POST", "/dav/evil.html"},
	} {
		resp := e.raw(c.method, c.path, nil, nil)
		check(c.method+" "+c.path, resp.Header, "", false)
	}
	// POST is no way around GET's headers: it serves nothing.
	if st, b := e.req("POST", "/dav/evil.html", nil, nil); st != http.StatusMethodNotAllowed || strings.Contains(b, "<script>") {
		t.Errorf("POST on a file: %d %q, want 405 without the content", st, b)
	}
	// Without credentials (401 before the WebDAV handler): still protected.
	resp, err := http.Get(e.d.URL + "/dav/evil.html")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	check("unauthenticated GET", resp.Header, "", false)
}

func TestInlineTypes(t *testing.T) {
	for ct, want := range map[string]bool{
		"image/png": true, "image/jpeg": true, "IMAGE/PNG": true, "text/plain; charset=utf-8": true,
		"video/mp4": true, "audio/mpeg": true,
		"text/html": false, "text/html; charset=utf-8": false, "image/svg+xml": false, "application/xhtml+xml": false,
		"application/xml": false, "text/xml": false, "text/xsl": false, "text/javascript": false,
		"application/javascript": false, "application/pdf": false, "text/css": false,
		"application/octet-stream": false, "multipart/x-mixed-replace": false, "": false, "garbage/": false,
		"application/x-shockwave-flash": false, "message/rfc822": false, "text/vtt": false,
	} {
		if got := dav.Inline(ct); got != want {
			t.Errorf("Inline(%q) = %v, want %v", ct, got, want)
		}
	}
}

func escape(name string) string { return (&url.URL{Path: name}).EscapedPath() }

// raw sends one request as admin and returns the answer, body read.
func (e *propEnv) raw(method, path string, body []byte, hdr map[string]string) *http.Response {
	e.t.Helper()
	resp, cancel := e.send(method, path, body, hdr)
	defer cancel()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}
