package dav

import (
	"encoding/xml"
	"net/http"
	"slices"
	"testing"
	"time"
)

type folderState struct{ lastMod, etag string }

// folder reads a folder's getlastmodified and getetag by PROPFIND Depth 0.
func (e *lockEnv) folder(path string) folderState {
	e.t.Helper()
	r := e.want(http.StatusMultiStatus, "alice", "PROPFIND", path,
		`<propfind xmlns="DAV:"><prop><getlastmodified/><getetag/></prop></propfind>`, "Depth: 0")
	var ms struct {
		Responses []struct {
			LastMod string `xml:"propstat>prop>getlastmodified"`
			ETag    string `xml:"propstat>prop>getetag"`
		} `xml:"response"`
	}
	if err := xml.Unmarshal([]byte(r.body), &ms); err != nil || len(ms.Responses) != 1 {
		e.t.Fatalf("PROPFIND %s: %v in %s", path, err, r.body)
	}
	return folderState{ms.Responses[0].LastMod, ms.Responses[0].ETag}
}

// A folder's time changes when an entry is added, removed or renamed into
// or out of it, at the drive's clock; its ancestors' do not. Its ETag
// changes with its time and with any change below it, at any depth (sync
// clients walk only the folders whose ETag changed): top, above every
// change here, gets a new ETag at each step, and a sibling untouched keeps
// its own.
func TestFolderTimesFollowEntries(t *testing.T) {
	e := startLockEnv(t)
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/top", "")
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/top/a", "")
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/top/b", "")

	all := []string{"/dav/top", "/dav/top/a", "/dav/top/b"}
	step := func(what string, changed, untouched []string, do func()) {
		t.Helper()
		before := map[string]folderState{}
		for _, p := range all {
			before[p] = e.folder(p)
		}
		e.clock.Advance(time.Minute)
		do()
		want := e.clock.Now().UTC().Format(http.TimeFormat)
		for _, p := range all {
			got := e.folder(p)
			switch {
			case slices.Contains(changed, p):
				if got.lastMod != want || got.etag == before[p].etag {
					t.Errorf("%s: %s is %+v (was %+v), want getlastmodified %s and a new ETag", what, p, got, before[p], want)
				}
			case slices.Contains(untouched, p):
				if got != before[p] {
					t.Errorf("%s: %s changed to %+v from %+v", what, p, got, before[p])
				}
			default: // an ancestor of the change: same time, new ETag
				if got.lastMod != before[p].lastMod || got.etag == before[p].etag {
					t.Errorf("%s: %s is %+v (was %+v), want the same time and a new ETag", what, p, got, before[p])
				}
			}
		}
	}
	step("PUT new file", []string{"/dav/top/a"}, []string{"/dav/top/b"}, func() {
		e.want(http.StatusCreated, "alice", "PUT", "/dav/top/a/f.txt", "one")
	})
	step("PUT over a file", nil, []string{"/dav/top/b"}, func() {
		e.want(http.StatusNoContent, "alice", "PUT", "/dav/top/a/f.txt", "two")
	})
	step("MOVE out and in", []string{"/dav/top/a", "/dav/top/b"}, nil, func() {
		e.want(http.StatusCreated, "alice", "MOVE", "/dav/top/a/f.txt", "", "Destination: /dav/top/b/g.txt")
	})
	step("rename within", []string{"/dav/top/b"}, []string{"/dav/top/a"}, func() {
		e.want(http.StatusCreated, "alice", "MOVE", "/dav/top/b/g.txt", "", "Destination: /dav/top/b/h.txt")
	})
	step("COPY in", []string{"/dav/top/a"}, []string{"/dav/top/b"}, func() {
		e.want(http.StatusCreated, "alice", "COPY", "/dav/top/b/h.txt", "", "Destination: /dav/top/a/c.txt")
	})
	step("DELETE", []string{"/dav/top/a"}, []string{"/dav/top/b"}, func() {
		e.want(http.StatusNoContent, "alice", "DELETE", "/dav/top/a/c.txt", "")
	})
	step("MKCOL child", []string{"/dav/top/b"}, []string{"/dav/top/a"}, func() {
		e.want(http.StatusCreated, "alice", "MKCOL", "/dav/top/b/sub", "")
	})
	step("MOVE folder", []string{"/dav/top/a", "/dav/top/b"}, nil, func() {
		e.want(http.StatusCreated, "alice", "MOVE", "/dav/top/b/sub", "", "Destination: /dav/top/a/sub2")
	})
}

// PUT with ownCloud's headers: X-OC-Mtime sets the time (answered
// "accepted"), OC-Checksum is checked before the commit, and the content's
// checksums come back in OC-Checksum and oc:checksums.
func TestOwncloudPutHeaders(t *testing.T) {
	e := startLockEnv(t)
	const body = "hello"
	const sha = "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d"
	const md5 = "5d41402abc4b2a76b9719d911017c592"
	r := e.want(http.StatusCreated, "alice", "PUT", "/dav/f.txt", body, "X-OC-Mtime: 981173106", "OC-Checksum: SHA1:"+sha)
	if r.hdr.Get("X-OC-MTime") != "accepted" || r.hdr.Get("OC-Checksum") != "SHA1:"+sha {
		t.Fatalf("PUT answer headers: %v", r.hdr)
	}
	// A body that does not match its claimed checksum is refused; the old
	// version stays.
	e.want(http.StatusUnprocessableEntity, "alice", "PUT", "/dav/f.txt", "jello", "OC-Checksum: MD5:"+md5)
	e.want(http.StatusUnprocessableEntity, "alice", "PUT", "/dav/new.txt", "jello", "OC-Checksum: SHA1:"+sha)
	e.want(http.StatusNotFound, "alice", "GET", "/dav/new.txt", "")
	g := e.want(http.StatusOK, "alice", "GET", "/dav/f.txt", "")
	if g.body != body || g.hdr.Get("OC-Checksum") != "SHA1:"+sha || g.hdr.Get("Last-Modified") != "Sat, 03 Feb 2001 04:05:06 GMT" {
		t.Fatalf("GET: %q %v", g.body, g.hdr)
	}
	p := e.want(http.StatusMultiStatus, "alice", "PROPFIND", "/dav/", `<propfind xmlns="DAV:" xmlns:oc="http://owncloud.org/ns"><prop><getlastmodified/><oc:checksums/></prop></propfind>`, "Depth: 1")
	var ms struct {
		Responses []struct {
			Href      string   `xml:"href"`
			Checksums []string `xml:"propstat>prop>checksums>checksum"`
		} `xml:"response"`
	}
	if err := xml.Unmarshal([]byte(p.body), &ms); err != nil || len(ms.Responses) != 2 {
		t.Fatalf("PROPFIND: %v in %s", err, p.body)
	}
	if got := ms.Responses[1].Checksums; len(got) != 1 || got[0] != "SHA1:"+sha+" MD5:"+md5 {
		t.Fatalf("oc:checksums of %s: %q in %s", ms.Responses[1].Href, got, p.body)
	}
	if len(ms.Responses[0].Checksums) != 0 {
		t.Fatalf("a folder has oc:checksums: %s", p.body)
	}
}
