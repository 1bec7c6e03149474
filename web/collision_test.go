package web_test

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// TestBrowserMD5Collision: the page's upload stores the bytes picked, never
// other content sharing their MD5s. A = a‖S and B = b‖S
// (testdata/md5collision) share size, chunk MD5s and file hash. With B held
// by another user (shared mode) and then by carol herself, carol uploads A
// through the page: her drive holds A. Uploading B again is still instant
// (the Worker names chunks and file by SHA-256 through crypto.subtle).
func TestBrowserMD5Collision(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB", "--instant-upload", "shared")
	ctx := context.Background()
	do := func(method, path, user, pass string, body []byte, want int) []byte {
		t.Helper()
		resp, err := d.Do(ctx, method, path, user, pass, body, map[string]string{"Content-Type": "application/json"})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
		}
		return got
	}
	do("POST", "/api/v1/admin/users", "admin", d.AdminPass, []byte(`{"name":"carol","password":"carol-password"}`), 201)
	b.SignIn(t, d.URL, "carol", "carol-password")
	dir := t.TempDir()
	for i, holder := range []string{"admin", "carol"} {
		A, B := testutil.MD5CollidingContents(t, 4*chunk+99)
		pass := d.AdminPass
		if holder == "carol" {
			pass = "carol-password"
		}
		do("PUT", "/dav/b-"+holder+".bin", holder, pass, B, 201)
		name := "a-" + holder + ".bin"
		f := writeFile(t, dir, name, A)
		b.Run(t, "pick "+name, 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
		if row := b.WaitUpload(t, "/"+name, 60*time.Second, "done", "error"); row.State != "done" {
			t.Fatalf("upload of %s: %+v", name, row)
		}
		switch got := do("GET", "/dav/"+name, "carol", "carol-password", nil, 200); {
		case bytes.Equal(got, B):
			t.Errorf("carol's %s holds B (held by %s): content substituted on an MD5 match", name, holder)
		case !bytes.Equal(got, A):
			t.Errorf("carol's %s differs from the file picked", name)
		}
		if i == 1 {
			f := writeFile(t, dir, "b-again.bin", B)
			b.Run(t, "pick b-again.bin", 20*time.Second, chromedp.SetUploadFiles("#pick-files", []string{f}, chromedp.ByQuery))
			if row := b.WaitUpload(t, "/b-again.bin", 60*time.Second, "done", "error"); row.State != "done" || !row.Instant || row.Sent != 0 {
				t.Errorf("upload of B, which carol holds: %+v, want instant with nothing sent", row)
			}
		}
	}
}
