package server

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

// TestWebZipWindowsNames: names that are one plain name in the drive but a
// path, a drive or a device to Windows unzip tools come out of a folder zip
// as one plain name each, every entry inside the archive's top folder,
// none lost to a collision, each with its own bytes.
func TestWebZipWindowsNames(t *testing.T) {
	_, hs := newTestServer(t, testutil.NewClock(time.Unix(1_800_000_000, 0)))
	do := func(method, p, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+"/dav"+(&url.URL{Path: p}).EscapedPath(), strings.NewReader(body))
		req.SetBasicAuth("alice", "pw-alice")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("%s %s: %v %v", method, p, err, resp)
		}
		resp.Body.Close()
	}
	do("MKCOL", "/d", "")
	do("MKCOL", `/d/..\sub`, "")
	files := []string{`..\..\evil.bat`, `C:\Windows\evil.dll`, `\\server\share\x`, `a:b`, `a_b`, `A_B`, "CON", "con.txt",
		"Lpt1.log", "COM9", "nul .txt", "a.txt.", "trail ", "...", `x*?|"<>.txt`, `..\sub/inner.txt`, "plain.txt"}
	for i, f := range files {
		do("PUT", "/d/"+f, strings.Repeat("x", i))
	}
	req, _ := http.NewRequest("GET", hs.URL+"/web/zip?path=/d", nil)
	req.SetBasicAuth("alice", "pw-alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("zip: %v %v", err, resp)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox") {
		t.Errorf("zip answer CSP %q", csp)
	}
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	sizes := map[int]bool{}
	for _, f := range zr.File {
		name := strings.TrimSuffix(f.Name, "/")
		if !strings.HasPrefix(name, "d/") && name != "d" {
			t.Errorf("entry %q outside the top folder", f.Name)
		}
		if strings.ContainsAny(name, `\:*?"<>|`) {
			t.Errorf("entry %q holds a character Windows reads as a separator, drive or wildcard", f.Name)
		}
		for _, c := range strings.Split(name, "/") {
			stem, _, _ := strings.Cut(strings.ToUpper(c), ".")
			stem = strings.TrimSpace(stem)
			if c == "" || c == "." || c == ".." || strings.HasSuffix(c, ".") || strings.HasSuffix(c, " ") ||
				stem == "CON" || stem == "NUL" || stem == "LPT1" || stem == "COM9" {
				t.Errorf("entry %q: component %q is not a plain Windows name", f.Name, c)
			}
		}
		if seen[strings.ToLower(f.Name)] {
			t.Errorf("entry %q twice (case-insensitively)", f.Name)
		}
		seen[strings.ToLower(f.Name)] = true
		if !f.FileInfo().IsDir() {
			sizes[int(f.UncompressedSize64)] = true
		}
	}
	for i := range files {
		if !sizes[i] {
			t.Errorf("the file %q (%d bytes) is missing from the zip: %v", files[i], i, keysOf(seen))
		}
	}
}

func keysOf(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
