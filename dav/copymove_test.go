package dav_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"netdisk/client"
	"netdisk/meta"
)

func TestCopyMoveBadInput(t *testing.T) {
	e := startPropEnv(t)
	e.must(201, "MKCOL", "/dav/a", nil, nil)
	e.must(201, "PUT", "/dav/a/f.txt", []byte("data"), nil)
	e.must(201, "PUT", "/dav/other.txt", []byte("other"), nil)
	host := strings.TrimPrefix(e.d.URL, "http://")
	before := parseMS(t, e.must(207, "PROPFIND", "/dav/", nil, map[string]string{"Depth": "infinity"})).hrefs()

	cases := []struct {
		name, method, src string
		hdr               map[string]string
		want              int
	}{
		{"foreign host", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "http://evil.example:80/dav/x.txt"}, http.StatusBadGateway},
		{"foreign host MOVE", "MOVE", "/dav/a/f.txt", map[string]string{"Destination": "http://127.0.0.2:1/dav/x.txt"}, http.StatusBadGateway},
		{"foreign scheme", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "ftp://" + host + "/dav/x.txt"}, http.StatusBadGateway},
		{"outside /dav/", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "http://" + host + "/api/v1/x"}, http.StatusBadGateway},
		{"outside /dav/, a path", "MOVE", "/dav/a/f.txt", map[string]string{"Destination": "/web/x"}, http.StatusBadGateway},
		{"prefix look-alike", "MOVE", "/dav/a/f.txt", map[string]string{"Destination": "/davx/f.txt"}, http.StatusBadGateway},
		{"prefix in another case", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/DAV/f.txt"}, http.StatusBadGateway},
		{"server root", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/"}, http.StatusBadGateway},
		{"the prefix without slash", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/dav"}, http.StatusForbidden},
		{"the prefix without slash, MOVE", "MOVE", "/dav/a/f.txt", map[string]string{"Destination": "/dav"}, http.StatusForbidden},
		{"the prefix, absolute URL", "MOVE", "/dav/a", map[string]string{"Destination": "http://" + host + "/dav"}, http.StatusForbidden},
		{"the drive's root", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/dav/"}, http.StatusForbidden},
		{"the drive's root, encoded", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/dav%2F"}, http.StatusForbidden},
		{"dot-dot", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/dav/../x.txt"}, http.StatusBadRequest},
		{"encoded dot-dot", "MOVE", "/dav/a/f.txt", map[string]string{"Destination": "http://" + host + "/dav/a/%2e%2e/%2E%2E/x.txt"}, http.StatusBadRequest},
		{"encoded slash dot-dot", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/dav/a/..%2f..%2fx.txt"}, http.StatusBadRequest},
		{"NUL", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/dav/x%00.txt"}, http.StatusBadRequest},
		{"no Destination", "COPY", "/dav/a/f.txt", nil, http.StatusBadRequest},
		{"relative Destination", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "x.txt"}, http.StatusBadRequest},
		{"bad Overwrite", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/dav/x.txt", "Overwrite": "maybe"}, http.StatusBadRequest},
		{"MOVE Depth 0", "MOVE", "/dav/a", map[string]string{"Destination": "/dav/b", "Depth": "0"}, http.StatusBadRequest},
		{"COPY Depth 1", "COPY", "/dav/a", map[string]string{"Destination": "/dav/b", "Depth": "1"}, http.StatusBadRequest},
		{"same path", "MOVE", "/dav/a/f.txt", map[string]string{"Destination": "/dav/a/f.txt"}, http.StatusForbidden},
		{"into itself", "COPY", "/dav/a", map[string]string{"Destination": "/dav/a/inner"}, http.StatusForbidden},
		{"Overwrite F", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/dav/other.txt", "Overwrite": "F"}, http.StatusPreconditionFailed},
		{"Overwrite F MOVE", "MOVE", "/dav/a/f.txt", map[string]string{"Destination": "/dav/other.txt", "Overwrite": "F"}, http.StatusPreconditionFailed},
		{"missing parent", "COPY", "/dav/a/f.txt", map[string]string{"Destination": "/dav/nosuch/f.txt"}, http.StatusConflict},
		{"missing source", "MOVE", "/dav/nosuch", map[string]string{"Destination": "/dav/x"}, http.StatusNotFound},
		{"encoded dot-dot source", "COPY", "/dav/%2e%2e/x", map[string]string{"Destination": "/dav/x"}, http.StatusBadRequest},
	}
	for _, c := range cases {
		if st, b := e.req(c.method, c.src, nil, c.hdr); st != c.want {
			t.Errorf("%s: %s %s %v: %d %.200s, want %d", c.name, c.method, c.src, c.hdr, st, b, c.want)
		}
	}
	after := parseMS(t, e.must(207, "PROPFIND", "/dav/", nil, map[string]string{"Depth": "infinity"})).hrefs()
	if strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("refused COPY/MOVE changed the tree:\n%q\n%q", before, after)
	}
	if got := e.must(200, "GET", "/dav/other.txt", nil, nil); got != "other" {
		t.Errorf("Overwrite F changed the destination: %q", got)
	}

	// The good cases: 201 created, 204 overwritten, absolute URL or path.
	e.must(201, "COPY", "/dav/a/f.txt", nil, map[string]string{"Destination": e.d.URL + "/dav/copy.txt"})
	e.must(204, "COPY", "/dav/a/f.txt", nil, map[string]string{"Destination": "/dav/other.txt"})
	if got := e.must(200, "GET", "/dav/other.txt", nil, nil); got != "data" {
		t.Errorf("overwritten destination holds %q", got)
	}
	e.must(201, "COPY", "/dav/a", nil, map[string]string{"Destination": "/dav/shallow", "Depth": "0"})
	e.must(201, "COPY", "/dav/a/", nil, map[string]string{"Destination": "/dav/deep/"})
	e.must(201, "MOVE", "/dav/deep", nil, map[string]string{"Destination": "/dav/moved%20dir"})
	got := parseMS(t, e.must(207, "PROPFIND", "/dav/", nil, map[string]string{"Depth": "infinity"})).hrefs()
	want := "/dav/ /dav/a/ /dav/a/f.txt /dav/copy.txt /dav/moved%20dir/ /dav/moved%20dir/f.txt /dav/other.txt /dav/shallow/"
	if strings.Join(got, " ") != want {
		t.Errorf("tree after COPY/MOVE:\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
	if got := e.must(200, "GET", "/dav/moved%20dir/f.txt", nil, nil); got != "data" {
		t.Errorf("moved file holds %q", got)
	}
}

// countChunks counts the chunk files the daemon stores.
func countChunks(t *testing.T, dataDir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(filepath.Join(dataDir, "chunks"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestCopySharesChunksAndCountsQuota(t *testing.T) {
	e := startPropEnv(t)
	data := make([]byte, 5<<20) // two chunks at the default size
	rand.Read(data)
	e.must(201, "MKCOL", "/dav/d", nil, nil)
	e.must(201, "PUT", "/dav/d/big.bin", data, nil)
	chunks := countChunks(t, e.d.DataDir)
	if chunks < 2 {
		t.Fatalf("a 5 MiB PUT stored %d chunk files", chunks)
	}
	e.must(201, "COPY", "/dav/d/big.bin", nil, map[string]string{"Destination": "/dav/copy.bin"})
	e.must(201, "COPY", "/dav/d", nil, map[string]string{"Destination": "/dav/d2"})
	if n := countChunks(t, e.d.DataDir); n != chunks {
		t.Errorf("COPY wrote chunks: %d chunk files before, %d after", chunks, n)
	}
	if got := e.must(200, "GET", "/dav/d2/big.bin", nil, nil); got != string(data) {
		t.Error("copied file differs from the original")
	}
	body := e.must(207, "PROPFIND", "/dav/", []byte(`<D:propfind xmlns:D="DAV:"><D:prop><D:quota-used-bytes/></D:prop></D:propfind>`), map[string]string{"Depth": "0"})
	q, err := client.New(e.d.URL, "admin", e.d.AdminPass).Quota(context.Background())
	if err != nil || q.Finished != 15728640 {
		t.Errorf("three logical copies of 5 MiB should count 15728640 bytes: %+v %v", q, err)
	}
	if want := fmt.Sprintf("<D:quota-used-bytes>%d</D:quota-used-bytes>", q.Finished+q.Metadata); !strings.Contains(body, want) {
		t.Errorf("quota-used-bytes is the files and their entries, %s:\n%s", want, body)
	}

	// A copy counts against the quota: at 16 MiB the next 5 MiB copy is 507
	// and leaves nothing behind.
	// (Through the admin API: the daemon's quota ledger must hear of it.)
	e.must(200, "PUT", "/api/v1/admin/users/admin/quota", []byte(`{"quota": 16777216}`), nil)
	if st, b := e.req("COPY", "/dav/copy.bin", nil, map[string]string{"Destination": "/dav/copy2.bin"}); st != http.StatusInsufficientStorage {
		t.Errorf("COPY over quota: %d %.200s, want 507", st, b)
	}
	if st, _ := e.req("PROPFIND", "/dav/copy2.bin", nil, map[string]string{"Depth": "0"}); st != http.StatusNotFound {
		t.Errorf("a refused COPY left its destination: %d", st)
	}
	body = e.must(207, "PROPFIND", "/dav/", []byte(`<D:propfind xmlns:D="DAV:"><D:prop><D:quota-available-bytes/></D:prop></D:propfind>`), map[string]string{"Depth": "0"})
	// What is left of 16 MiB: 1 MiB less what the five entries cost.
	ec := meta.EntryCharge
	free := 1<<20 - ec("d") - ec("big.bin") - ec("copy.bin") - ec("d2") - ec("big.bin")
	if !strings.Contains(body, fmt.Sprintf("<D:quota-available-bytes>%d</D:quota-available-bytes>", free)) {
		t.Errorf("quota-available-bytes with a 16 MiB quota, want %d:\n%s", free, body)
	}
}
