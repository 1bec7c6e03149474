package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/meta"
	"netdisk/testutil"
)

// davMethods is every method a WebDAV client may send: the ones a link's
// Allow may list and the ones it must refuse.
var davMethods = []string{"OPTIONS", "GET", "HEAD", "PUT", "DELETE", "PROPFIND", "PROPPATCH",
	"MKCOL", "COPY", "MOVE", "LOCK", "UNLOCK", "SEARCH", "POST"}

// TestLinkDAVAllowIsWhatIsServed checks OPTIONS through a public link
// against what the link does: for every kind of link, on its root, a file,
// a folder and a missing name, every method Allow lists is answered (not
// 403 or 405), and every method it leaves out is refused (403 or 405; 404
// where the name does not exist). Each request runs on a fresh copy of the
// tree and a fresh link, so a DELETE or MOVE does not change what the next
// method meets.
func TestLinkDAVAllowIsWhatIsServed(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	env := drivetest.New(t, drivetest.Options{Clock: clock})
	alice := env.AddUser(t, "alice", 0)
	d := env.Drive
	hs := httptest.NewServer(New(Config{Drive: d, Now: clock.Now}).Handler())
	t.Cleanup(hs.Close)
	ctx := context.Background()
	c := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(c.CloseIdleConnections)

	n := 0
	// fresh makes alice's tree /cN/pub/{a.txt, sub/b.txt} and /cN/f.txt and
	// a link of perm to /cN/pub (or /cN/f.txt when file), and returns the
	// link's WebDAV base.
	fresh := func(perm meta.LinkPerm, file bool) string {
		t.Helper()
		n++
		dir := fmt.Sprintf("/c%d", n)
		if err := d.MkdirAll(ctx, alice.ID, dir+"/pub/sub"); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{dir + "/pub/a.txt", dir + "/pub/sub/b.txt", dir + "/f.txt"} {
			if _, _, err := d.PutFile(ctx, alice.ID, p, drive.PutOptions{Size: 3}, strings.NewReader("abc")); err != nil {
				t.Fatal(err)
			}
		}
		target := dir + "/pub"
		if file {
			target = dir + "/f.txt"
		}
		tok, _, err := d.CreateLink(ctx, alice.ID, target, drive.LinkOptions{Perm: perm})
		if err != nil {
			t.Fatal(err)
		}
		return hs.URL + "/public.php/dav/files/" + tok
	}
	// do sends method to base+p, each with what makes it succeed when it
	// is served (a body, a Destination under the link), and returns the
	// status and the Allow and DAV headers.
	do := func(method, base, p string) (int, string, http.Header) {
		t.Helper()
		var body string
		hdr := map[string]string{}
		switch method {
		case "PUT":
			body = "new"
		case "COPY", "MOVE":
			hdr["Destination"] = base + "/copied"
		case "PROPFIND":
			hdr["Depth"] = "1"
		case "PROPPATCH":
			body = `<?xml version="1.0"?><d:propertyupdate xmlns:d="DAV:" xmlns:x="urn:x"><d:set><d:prop><x:p>v</x:p></d:prop></d:set></d:propertyupdate>`
		case "LOCK":
			body = `<?xml version="1.0"?><d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/></d:lockscope><d:locktype><d:write/></d:locktype></d:lockinfo>`
		case "UNLOCK":
			hdr["Lock-Token"] = "<opaquelocktoken:00000000-0000-0000-0000-000000000000>"
		case "SEARCH":
			body = `<?xml version="1.0"?><d:searchrequest xmlns:d="DAV:"><d:basicsearch><d:select><d:prop><d:displayname/></d:prop></d:select><d:from><d:scope><d:href>/</d:href><d:depth>infinity</d:depth></d:scope></d:from></d:basicsearch></d:searchrequest>`
		}
		req, err := http.NewRequest(method, base+p, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Allow"), resp.Header
	}

	type target struct {
		name, path string
		exists     bool
	}
	folderTargets := []target{{"root", "/", true}, {"file", "/a.txt", true}, {"folder", "/sub/", true}, {"missing", "/nothing", false}}
	for _, k := range []struct {
		name    string
		perm    meta.LinkPerm
		file    bool
		targets []target
	}{
		{"read folder", meta.LinkRead, false, folderTargets},
		{"read-write folder", meta.LinkReadWrite, false, folderTargets},
		{"file drop", meta.LinkUpload, false, folderTargets},
		{"read file", meta.LinkRead, true, []target{{"root", "/", true}, {"missing", "/nothing", false}}},
	} {
		for _, tg := range k.targets {
			t.Run(k.name+"/"+tg.name, func(t *testing.T) {
				st, allowHdr, hd := do("OPTIONS", fresh(k.perm, k.file), tg.path)
				var allow []string
				for _, m := range strings.Split(allowHdr, ",") {
					if m = strings.TrimSpace(m); m != "" {
						allow = append(allow, m)
					}
				}
				if k.perm == meta.LinkUpload {
					// Not served over WebDAV at all: OPTIONS is refused
					// too and promises nothing.
					if st != http.StatusForbidden || len(allow) != 0 {
						t.Fatalf("OPTIONS through a file drop: %d, Allow %q", st, allowHdr)
					}
				} else if st != http.StatusOK {
					t.Fatalf("OPTIONS: %d", st)
				}
				if len(allow) != 0 && strings.Contains(hd.Get("DAV"), "2") {
					t.Errorf("DAV %q promises locking, which a link refuses", hd.Get("DAV"))
				}
				if hd.Get("DASL") != "" {
					t.Errorf("DASL %q offers SEARCH, which a link refuses", hd.Get("DASL"))
				}
				for _, m := range davMethods {
					st, _, _ := do(m, fresh(k.perm, k.file), tg.path)
					refused := st == http.StatusForbidden || st == http.StatusMethodNotAllowed
					switch listed := slices.Contains(allow, m); {
					case listed && refused:
						t.Errorf("Allow %q lists %s, which is refused: %d", allowHdr, m, st)
					case !listed && !refused && !(st == http.StatusNotFound && !tg.exists):
						t.Errorf("Allow %q leaves out %s, which is answered: %d", allowHdr, m, st)
					}
				}
			})
		}
	}
}
