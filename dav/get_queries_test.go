package dav_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"netdisk/dav"
	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/meta"
)

// readCounter is the real SQLite store with its reads counted: the
// methods a GET could reach the store through are listed, each call
// recorded by name.
type readCounter struct {
	meta.Store
	mu    sync.Mutex
	calls []string
}

func (c *readCounter) note(name string) {
	c.mu.Lock()
	c.calls = append(c.calls, name)
	c.mu.Unlock()
}

func (c *readCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	return out
}

func (c *readCounter) Stat(ctx context.Context, uid int64, p string) (meta.Node, error) {
	c.note("Stat")
	return c.Store.Stat(ctx, uid, p)
}

func (c *readCounter) NodeByID(ctx context.Context, uid, id int64) (meta.Node, error) {
	c.note("NodeByID")
	return c.Store.NodeByID(ctx, uid, id)
}

func (c *readCounter) ListDir(ctx context.Context, uid int64, p string) (meta.Node, []meta.Node, error) {
	c.note("ListDir")
	return c.Store.ListDir(ctx, uid, p)
}

func (c *readCounter) List(ctx context.Context, uid int64, p string) ([]meta.Node, error) {
	c.note("List")
	return c.Store.List(ctx, uid, p)
}

func (c *readCounter) FileChunks(ctx context.Context, id int64) ([]meta.FileChunk, error) {
	c.note("FileChunks")
	return c.Store.FileChunks(ctx, id)
}

func (c *readCounter) OpenFile(ctx context.Context, uid int64, p string) (meta.Node, []meta.FileChunk, error) {
	c.note("OpenFile")
	return c.Store.OpenFile(ctx, uid, p)
}

func (c *readCounter) ChunkData(ctx context.Context, sha string) ([]byte, bool, error) {
	c.note("ChunkData")
	return c.Store.ChunkData(ctx, sha)
}

func (c *readCounter) ChunkBySHA256(ctx context.Context, sha string) (meta.Chunk, error) {
	c.note("ChunkBySHA256")
	return c.Store.ChunkBySHA256(ctx, sha)
}

func (c *readCounter) Props(ctx context.Context, id int64) ([]meta.Prop, error) {
	c.note("Props")
	return c.Store.Props(ctx, id)
}

func (c *readCounter) UserByID(ctx context.Context, id int64) (meta.User, error) {
	c.note("UserByID")
	return c.Store.UserByID(ctx, id)
}

// A GET or HEAD of a file asks the metadata store one question: the node,
// its chunks and a small file's bytes come in one query. Small (inline)
// files, files of several chunks, ranges, conditional requests and links
// alike; the answers are the file's bytes.
func TestGetIsOneMetadataQuery(t *testing.T) {
	const chunk = 64 << 10
	e := drivetest.New(t, drivetest.Options{ChunkSize: chunk})
	u := e.AddUser(t, "alice", 0)
	rc := &readCounter{Store: e.Meta}
	d := drive.New(drive.Config{Meta: rc, Blobs: e.Blobs, Quota: e.Quota, ChunkSize: chunk})
	h := dav.NewHandler(d, "/dav", nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.Serve(w, r, u) }))
	defer srv.Close()

	ctx := context.Background()
	files := map[string][]byte{
		"/small":  bytes.Repeat([]byte("s"), 4096),
		"/big":    bytes.Repeat([]byte("0123456789abcdef"), 3*chunk/16+100), // three blob chunks and an inline tail
		"/empty":  {},
		"/dir/in": []byte("inside"),
	}
	for p, b := range files {
		if _, _, err := e.Drive.PutFile(ctx, u.ID, p, drive.PutOptions{Size: int64(len(b))}, bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Drive.Symlink(ctx, u.ID, "/link", "small"); err != nil {
		t.Fatal(err)
	}
	files["/link"] = []byte("small")

	type req struct {
		method, path string
		hdr          map[string]string
		status       int
		body         func(b []byte) []byte
	}
	whole := func(b []byte) []byte { return b }
	var cases []req
	for p := range files {
		cases = append(cases,
			req{"GET", p, nil, 200, whole},
			req{"HEAD", p, nil, 200, func([]byte) []byte { return nil }},
		)
	}
	cases = append(cases,
		req{"GET", "/big", map[string]string{"Range": "bytes=65530-65545"}, 206, func(b []byte) []byte { return b[65530:65546] }},
		req{"GET", "/small", map[string]string{"Range": "bytes=10-19"}, 206, func(b []byte) []byte { return b[10:20] }},
		req{"GET", "/small", map[string]string{"If-Modified-Since": "Mon, 01 Jan 2001 00:00:00 GMT"}, 200, whole},
	)
	rc.take()
	for _, c := range cases {
		t.Run(c.method+strings.ReplaceAll(c.path, "/", "_")+fmt.Sprint(len(c.hdr)), func(t *testing.T) {
			r, _ := http.NewRequest(c.method, srv.URL+"/dav"+c.path, nil)
			for k, v := range c.hdr {
				r.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != c.status || !bytes.Equal(got, c.body(files[c.path])) {
				t.Fatalf("%s %s: %d, %d bytes; want %d, %d bytes", c.method, c.path, resp.StatusCode, len(got), c.status, len(c.body(files[c.path])))
			}
			if calls := rc.take(); len(calls) != 1 || calls[0] != "OpenFile" {
				t.Errorf("%s %s asked the store %v; want one OpenFile", c.method, c.path, calls)
			}
		})
	}
}
