package dav

import (
	"context"
	"encoding/xml"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"netdisk/davlock"
	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/internal/testutil"
	"netdisk/meta"
)

// startClockEnv is startLockEnv with one fake clock for the metadata store,
// the drive and the lock manager: folder times come from the drive's clock.
func startClockEnv(t *testing.T) *lockEnv {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	clock := testutil.NewClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	m, err := meta.OpenSQLite(ctx, filepath.Join(dir, "meta.db"), clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	blobs, err := dedup.NewDiskStore(filepath.Join(dir, "chunks"))
	if err != nil {
		t.Fatal(err)
	}
	d := drive.New(drive.Config{Meta: m, Blobs: blobs, Now: clock.Now, Locks: davlock.NewManager(clock.Now)})
	u, err := d.AddUser(ctx, "alice", "pw-alice", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(d, "/dav", slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Serve(w, r, u) }))
	t.Cleanup(hs.Close)
	return &lockEnv{t: t, h: h, clock: clock, url: hs.URL}
}

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

// A folder's time (and so its ETag) changes when an entry is added, removed
// or renamed into or out of it, at the drive's clock; its ancestors' do not.
func TestFolderTimesFollowEntries(t *testing.T) {
	e := startClockEnv(t)
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/top", "")
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/top/a", "")
	e.want(http.StatusCreated, "alice", "MKCOL", "/dav/top/b", "")

	step := func(what string, changed []string, unchanged []string, do func()) {
		t.Helper()
		before := map[string]folderState{}
		for _, p := range append(append([]string{}, changed...), unchanged...) {
			before[p] = e.folder(p)
		}
		e.clock.Advance(time.Minute)
		do()
		want := e.clock.Now().UTC().Format(http.TimeFormat)
		for _, p := range changed {
			got := e.folder(p)
			if got.lastMod != want || got.etag == before[p].etag {
				t.Errorf("%s: %s is %+v (was %+v), want getlastmodified %s and a new ETag", what, p, got, before[p], want)
			}
		}
		for _, p := range unchanged {
			if got := e.folder(p); got != before[p] {
				t.Errorf("%s: %s changed to %+v from %+v", what, p, got, before[p])
			}
		}
	}
	step("PUT new file", []string{"/dav/top/a"}, []string{"/dav/top", "/dav/top/b"}, func() {
		e.want(http.StatusCreated, "alice", "PUT", "/dav/top/a/f.txt", "one")
	})
	step("PUT over a file", nil, []string{"/dav/top/a", "/dav/top"}, func() {
		e.want(http.StatusNoContent, "alice", "PUT", "/dav/top/a/f.txt", "two")
	})
	step("MOVE out and in", []string{"/dav/top/a", "/dav/top/b"}, []string{"/dav/top"}, func() {
		e.want(http.StatusCreated, "alice", "MOVE", "/dav/top/a/f.txt", "", "Destination: /dav/top/b/g.txt")
	})
	step("rename within", []string{"/dav/top/b"}, []string{"/dav/top", "/dav/top/a"}, func() {
		e.want(http.StatusCreated, "alice", "MOVE", "/dav/top/b/g.txt", "", "Destination: /dav/top/b/h.txt")
	})
	step("COPY in", []string{"/dav/top/a"}, []string{"/dav/top", "/dav/top/b"}, func() {
		e.want(http.StatusCreated, "alice", "COPY", "/dav/top/b/h.txt", "", "Destination: /dav/top/a/c.txt")
	})
	step("DELETE", []string{"/dav/top/a"}, []string{"/dav/top", "/dav/top/b"}, func() {
		e.want(http.StatusNoContent, "alice", "DELETE", "/dav/top/a/c.txt", "")
	})
	step("MKCOL child", []string{"/dav/top/b"}, []string{"/dav/top", "/dav/top/a"}, func() {
		e.want(http.StatusCreated, "alice", "MKCOL", "/dav/top/b/sub", "")
	})
	step("MOVE folder", []string{"/dav/top/a", "/dav/top/b"}, []string{"/dav/top"}, func() {
		e.want(http.StatusCreated, "alice", "MOVE", "/dav/top/b/sub", "", "Destination: /dav/top/a/sub2")
	})
}
