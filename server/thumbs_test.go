package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/testutil"
)

func testJPEG(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetRGBA(x, y, color.RGBA{uint8(x), uint8(y), 90, 255})
		}
	}
	var b bytes.Buffer
	jpeg.Encode(&b, img, nil)
	return b.Bytes()
}

type thumbAnswer struct {
	code int
	hdr  http.Header
	body []byte
}

func getThumb(t *testing.T, d *testutil.Daemon, path, user, pass string, hdr map[string]string) thumbAnswer {
	t.Helper()
	resp, err := d.Do(context.Background(), "GET", path, user, pass, nil, hdr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return thumbAnswer{resp.StatusCode, resp.Header, b}
}

// Thumbnails through the real daemon: the API endpoint and the Nextcloud
// preview shapes, their caching headers and 304, the refusals with their
// statuses, another user's files answered as missing, and the counters on
// /metrics.
func TestThumbnails(t *testing.T) {
	d := testutil.StartDaemon(t, "--log-level", "warn")
	if code, out := fetch(t, d, "POST", "/api/v1/admin/users", "admin", d.AdminPass, []byte(`{"name":"carol","password":"carol-pass-1"}`)); code != http.StatusCreated {
		t.Fatalf("add carol: %d %s", code, out)
	}
	put := func(user, pass, p string, body []byte) {
		t.Helper()
		if code, out := fetch(t, d, "PUT", "/dav"+p, user, pass, body); code != http.StatusCreated && code != http.StatusNoContent {
			t.Fatalf("PUT %s: %d %s", p, code, out)
		}
	}
	photo := testJPEG(1200, 800)
	put("admin", d.AdminPass, "/photo.jpg", photo)
	put("admin", d.AdminPass, "/bomb.png", testutil.PNGBomb(60000, 60000))
	put("admin", d.AdminPass, "/notes.txt", []byte("not a picture"))
	put("carol", "carol-pass-1", "/same.jpg", photo)
	if code, _ := fetch(t, d, "MKCOL", "/dav/album", "admin", d.AdminPass, nil); code != http.StatusCreated {
		t.Fatalf("MKCOL: %d", code)
	}

	a := getThumb(t, d, "/api/v1/thumb?path=/photo.jpg&size=200", "admin", d.AdminPass, nil)
	if a.code != 200 || a.hdr.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("thumb: %d %s %s", a.code, a.hdr.Get("Content-Type"), a.body)
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(a.body))
	if err != nil || cfg.Width != 256 || cfg.Height != 170 {
		t.Fatalf("thumbnail %dx%d, %v; want 256x170", cfg.Width, cfg.Height, err)
	}
	etag := a.hdr.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `-256"`) || !strings.Contains(a.hdr.Get("Cache-Control"), "private, max-age=") {
		t.Fatalf("ETag %q, Cache-Control %q", etag, a.hdr.Get("Cache-Control"))
	}
	nm := getThumb(t, d, "/api/v1/thumb?path=/photo.jpg&size=256", "admin", d.AdminPass, map[string]string{"If-None-Match": `"x", ` + etag})
	if nm.code != http.StatusNotModified || len(nm.body) != 0 || nm.hdr.Get("ETag") != etag {
		t.Fatalf("If-None-Match: %d, etag %q", nm.code, nm.hdr.Get("ETag"))
	}
	if o := getThumb(t, d, "/api/v1/thumb?path=/photo.jpg&size=64", "admin", d.AdminPass, map[string]string{"If-None-Match": etag}); o.code != 200 || o.hdr.Get("ETag") == etag {
		t.Fatalf("another size with the 256 tag: %d, etag %q", o.code, o.hdr.Get("ETag"))
	}

	for _, c := range []struct {
		path string
		code int
		msg  string
	}{
		{"/bomb.png", http.StatusUnsupportedMediaType, "over the 40 MP limit"},
		{"/notes.txt", http.StatusUnsupportedMediaType, "not an image"},
		{"/album", http.StatusBadRequest, "folder"},
		{"/missing.jpg", http.StatusNotFound, ""},
	} {
		a := getThumb(t, d, "/api/v1/thumb?path="+c.path, "admin", d.AdminPass, nil)
		var e apitype.Error
		if a.code != c.code || json.Unmarshal(a.body, &e) != nil || !strings.Contains(e.Error, c.msg) || strings.Contains(e.Error, "\n") {
			t.Errorf("%s: %d %s, want %d with %q", c.path, a.code, a.body, c.code, c.msg)
		}
	}
	if a := getThumb(t, d, "/api/v1/thumb?path=/photo.jpg&size=big", "admin", d.AdminPass, nil); a.code != http.StatusBadRequest {
		t.Errorf("size=big: %d", a.code)
	}
	// carol's own copy is hers; admin's photo is not.
	if a := getThumb(t, d, "/api/v1/thumb?path=/photo.jpg", "carol", "carol-pass-1", nil); a.code != http.StatusNotFound {
		t.Errorf("another user's path: %d", a.code)
	}

	// The Nextcloud shape, by the node id the listing gives, with an app
	// token as the mobile apps sign in.
	code, out := fetch(t, d, "POST", "/api/v1/account/tokens", "carol", "carol-pass-1", []byte(`{"name":"phone"}`))
	var tok struct{ Token string }
	if code != http.StatusCreated || json.Unmarshal([]byte(out), &tok) != nil {
		t.Fatalf("token: %d %s", code, out)
	}
	id := func(user, pass, p string) int64 {
		code, out := fetch(t, d, "GET", "/api/v1/fs/stat?path="+p, user, pass, nil)
		var n apitype.Node
		if code != 200 || json.Unmarshal([]byte(out), &n) != nil || n.ID == 0 {
			t.Fatalf("stat %s: %d %s", p, code, out)
		}
		return n.ID
	}
	mine, theirs := id("carol", "carol-pass-1", "/same.jpg"), id("admin", d.AdminPass, "/photo.jpg")
	nc := getThumb(t, d, "/index.php/core/preview?fileId="+strconv.FormatInt(mine, 10)+"&x=1024&y=1024&a=1&mode=cover", "carol", tok.Token, nil)
	if nc.code != 200 || nc.hdr.Get("ETag") == "" {
		t.Fatalf("nextcloud preview: %d %s", nc.code, nc.body)
	}
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(nc.body)); err != nil || cfg.Width != 1024 {
		t.Fatalf("nextcloud preview %dx%d, %v", cfg.Width, cfg.Height, err)
	}
	other := getThumb(t, d, "/index.php/core/preview?fileId="+strconv.FormatInt(theirs, 10)+"&x=64&y=64", "carol", tok.Token, nil)
	random := getThumb(t, d, "/index.php/core/preview?fileId=987654&x=64&y=64", "carol", tok.Token, nil)
	if other.code != http.StatusNotFound || random.code != http.StatusNotFound || !bytes.Equal(other.body, random.body) {
		t.Fatalf("another user's id: %d %q; a random id: %d %q", other.code, other.body, random.code, random.body)
	}
	if a := getThumb(t, d, "/index.php/core/preview.png?file=/same.jpg&x=32&y=32", "carol", tok.Token, nil); a.code != 200 {
		t.Fatalf("preview.png by path: %d %s", a.code, a.body)
	}
	if a := getThumb(t, d, "/index.php/core/preview?fileId="+strconv.FormatInt(mine, 10), "", "", nil); a.code != http.StatusUnauthorized || a.hdr.Get("WWW-Authenticate") == "" {
		t.Fatalf("no credentials: %d", a.code)
	}

	// Made: the photo at 256, 64 and (carol's copy) 1024; cached: carol's
	// 32 of preview.png, the same content at 64. Refused: the bomb and the
	// text file.
	_, metrics := fetch(t, d, "GET", "/metrics", "admin", d.AdminPass, nil)
	for _, want := range []string{"netdisk_thumbnails_made_total 3", "netdisk_thumbnails_cached_total 1", "netdisk_thumbnails_refused_total 2"} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// On nodes sharing PostgreSQL, S3 and Redis, a file written through one
// node has its thumbnail through the other; each node makes it once in its
// own folder and answers the same ETag, so a client moving between nodes
// keeps its cached copy.
func TestThumbnailsAcrossNodes(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	r := testutil.StartRedis(t)
	blobs, _ := testutil.SharedS3(t).NewBucket(t)
	shared := []string{"--meta", pg.NewDatabase(t), "--blobs", blobs, "--redis", r.URL, "--chunk-size", "64KiB", "--log-level", "warn"}
	a, b := testutil.StartDaemon(t, shared...), testutil.StartDaemon(t, shared...)
	photo := testJPEG(900, 600) // several 64 KiB chunks
	if code, out := fetch(t, a, "PUT", "/dav/p.jpg", "admin", a.AdminPass, photo); code != http.StatusCreated {
		t.Fatalf("PUT through A: %d %s", code, out)
	}
	var etags []string
	for _, d := range []*testutil.Daemon{b, a, b} {
		ans := getThumb(t, d, "/api/v1/thumb?path=/p.jpg&size=256", "admin", a.AdminPass, nil)
		if ans.code != 200 {
			t.Fatalf("through %s: %d %s", d.Addr, ans.code, ans.body)
		}
		if cfg, _, err := image.DecodeConfig(bytes.NewReader(ans.body)); err != nil || cfg.Width != 256 {
			t.Fatalf("through %s: %dx%d, %v", d.Addr, cfg.Width, cfg.Height, err)
		}
		etags = append(etags, ans.hdr.Get("ETag"))
	}
	if etags[0] != etags[1] || etags[1] != etags[2] {
		t.Fatalf("ETags differ between nodes: %q", etags)
	}
	for _, c := range []struct {
		d            *testutil.Daemon
		made, cached string
	}{{a, "1", "0"}, {b, "1", "1"}} {
		_, m := fetch(t, c.d, "GET", "/metrics", "admin", a.AdminPass, nil)
		if !strings.Contains(m, "netdisk_thumbnails_made_total "+c.made+"\n") || !strings.Contains(m, "netdisk_thumbnails_cached_total "+c.cached+"\n") {
			t.Errorf("%s: want made %s, cached %s", c.d.Addr, c.made, c.cached)
		}
	}
}
