package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/meta"
	"netdisk/testutil"
)

// treeReads is the real SQLite store with its reads of the tree counted:
// the methods a PROPFIND could reach the store through, each call
// recorded by name.
type treeReads struct {
	meta.Store
	mu    sync.Mutex
	calls []string
}

func (c *treeReads) note(name string) {
	c.mu.Lock()
	c.calls = append(c.calls, name)
	c.mu.Unlock()
}

func (c *treeReads) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.calls
	c.calls = nil
	sort.Strings(out)
	return out
}

func (c *treeReads) Stat(ctx context.Context, uid int64, p string) (meta.Node, error) {
	c.note("Stat")
	return c.Store.Stat(ctx, uid, p)
}

func (c *treeReads) NodeByID(ctx context.Context, uid, id int64) (meta.Node, error) {
	c.note("NodeByID")
	return c.Store.NodeByID(ctx, uid, id)
}

func (c *treeReads) ListDir(ctx context.Context, uid int64, p string) (meta.Node, []meta.Node, error) {
	c.note("ListDir")
	return c.Store.ListDir(ctx, uid, p)
}

func (c *treeReads) List(ctx context.Context, uid int64, p string) ([]meta.Node, error) {
	c.note("List")
	return c.Store.List(ctx, uid, p)
}

func (c *treeReads) OpenFile(ctx context.Context, uid int64, p string) (meta.Node, []meta.FileChunk, error) {
	c.note("OpenFile")
	return c.Store.OpenFile(ctx, uid, p)
}

func (c *treeReads) Props(ctx context.Context, id int64) ([]meta.Prop, error) {
	c.note("Props")
	return c.Store.Props(ctx, id)
}

func (c *treeReads) PropsUnder(ctx context.Context, uid int64, dir string, recursive bool) (map[int64][]meta.Prop, error) {
	c.note("PropsUnder")
	return c.Store.PropsUnder(ctx, uid, dir, recursive)
}

func (c *treeReads) Mounts(ctx context.Context, uid int64) ([]meta.Mount, error) {
	c.note("Mounts")
	return c.Store.Mounts(ctx, uid)
}

func (c *treeReads) TreeBytes(ctx context.Context, uid int64, p string) (int64, error) {
	c.note("TreeBytes")
	return c.Store.TreeBytes(ctx, uid, p)
}

func (c *treeReads) CountTree(ctx context.Context, uid int64, dir string, limit int) (int, error) {
	c.note("CountTree")
	return c.Store.CountTree(ctx, uid, dir, limit)
}

func (c *treeReads) Tree(ctx context.Context, uid int64, dir string, limit int) ([]meta.Node, error) {
	c.note("Tree")
	return c.Store.Tree(ctx, uid, dir, limit)
}

// A Depth 1 PROPFIND of a folder asks the store the same questions
// however many entries the folder has, and the same as its owner's own
// PROPFIND, whether the folder is reached by its owner, through a public
// link (BASE/public.php/dav/files/TOKEN/) or by the user it is shared with
// (their /dav/): no question per entry. The answers list the same entries,
// each named in the asker's terms (never the owner's path above the link),
// with the same ETags.
func TestSharedPropfindAsksNoMorePerEntry(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	env := drivetest.New(t, drivetest.Options{Clock: clock})
	alice := env.AddUser(t, "alice", 0)
	env.AddUser(t, "bob", 0)
	rc := &treeReads{Store: env.Meta}
	d := drive.New(drive.Config{Meta: rc, Blobs: env.Blobs, Quota: env.Quota, Now: clock.Now})
	hs := httptest.NewServer(New(Config{Drive: d, Now: clock.Now}).Handler())
	t.Cleanup(hs.Close)
	ctx := context.Background()

	tokens := map[int]string{}
	for _, n := range []int{3, 30} {
		dir := fmt.Sprintf("/deep/in/f%d", n)
		if err := d.MkdirAll(ctx, alice.ID, dir); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if _, err := d.Mkdir(ctx, alice.ID, fmt.Sprintf("%s/d%02d", dir, i)); err != nil {
				t.Fatal(err)
			}
			body := []byte(fmt.Sprint("file ", i))
			if _, _, err := d.PutFile(ctx, alice.ID, fmt.Sprintf("%s/f%02d.txt", dir, i), drive.PutOptions{Size: int64(len(body))}, bytes.NewReader(body)); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.PatchProps(ctx, alice.ID, dir+"/f00.txt", []meta.Prop{{Space: "urn:x", Local: "colour", InnerXML: "blue"}}, nil); err != nil {
			t.Fatal(err)
		}
		tok, _, err := d.CreateLink(ctx, alice.ID, dir, drive.LinkOptions{Perm: meta.LinkRead})
		if err != nil {
			t.Fatal(err)
		}
		tokens[n] = tok
		if _, err := d.ShareWithUser(ctx, alice.ID, dir, "bob", false); err != nil {
			t.Fatal(err)
		}
	}

	hrefRe := regexp.MustCompile(`<D:href>([^<]*)</D:href>`)
	etagRe := regexp.MustCompile(`<D:getetag>([^<]*)</D:getetag>`)
	propfind := func(user, pass, path string) (hrefs, etags []string, calls []string) {
		t.Helper()
		req, _ := http.NewRequest("PROPFIND", hs.URL+path, nil)
		req.Header.Set("Depth", "1")
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		rc.take()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		calls = rc.take()
		if resp.StatusCode != http.StatusMultiStatus {
			t.Fatalf("PROPFIND %s as %q: %s %s", path, user, resp.Status, b)
		}
		if !strings.Contains(string(b), "blue") {
			t.Errorf("PROPFIND %s as %q: the dead property of f00.txt is missing", path, user)
		}
		for _, m := range hrefRe.FindAllStringSubmatch(string(b), -1) {
			hrefs = append(hrefs, m[1])
		}
		for _, m := range etagRe.FindAllStringSubmatch(string(b), -1) {
			etags = append(etags, m[1])
		}
		return hrefs, etags, calls
	}
	for _, n := range []int{3, 30} {
		own, ownTags, ownCalls := propfind("alice", drivetest.Password("alice"), fmt.Sprintf("/dav/deep/in/f%d/", n))
		if len(own) != 2*n+1 {
			t.Fatalf("alice's PROPFIND lists %d entries, want %d", len(own), 2*n+1)
		}
		for _, c := range []struct {
			who, user, pass, prefix string
		}{
			{"the link", "", "", "/public.php/dav/files/" + tokens[n]},
			{"bob's share", "bob", drivetest.Password("bob"), fmt.Sprintf("/dav/f%d", n)},
		} {
			hrefs, tags, calls := propfind(c.user, c.pass, c.prefix+"/")
			if len(hrefs) != len(own) {
				t.Fatalf("%s lists %d entries, alice %d", c.who, len(hrefs), len(own))
			}
			for i, h := range hrefs {
				want := c.prefix + strings.TrimPrefix(own[i], fmt.Sprintf("/dav/deep/in/f%d", n))
				if h != want {
					t.Fatalf("%s: entry %d is %q, want %q", c.who, i, h, want)
				}
			}
			if strings.Join(tags, " ") != strings.Join(ownTags, " ") {
				t.Errorf("%s: ETags differ from alice's", c.who)
			}
			// The link's own resolution (its token, owner and node) and
			// the recipient's entries are asked once a request; beyond
			// those, the same questions as alice's PROPFIND.
			var rest []string
			for _, q := range calls {
				if q != "NodeByID" && q != "Mounts" {
					rest = append(rest, q)
				}
			}
			var ownRest []string
			for _, q := range ownCalls {
				if q != "Mounts" {
					ownRest = append(ownRest, q)
				}
			}
			if strings.Join(rest, " ") != strings.Join(ownRest, " ") || len(calls)-len(rest) > 2 {
				t.Errorf("PROPFIND of %d+%d entries through %s asked the store %v; alice's own asked %v", n, n, c.who, calls, ownCalls)
			}
		}
	}
}

// A link's WebDAV stays inside the link: a read link refuses writes; a
// read-write link writes as the owner but never removes, moves or replaces
// its root, never takes locks, searches or sees the owner's lock tokens,
// and is bound by the owner's locks; a Destination elsewhere (another
// link, the owner's /dav/, "..") moves nothing; the owner's own share
// entries show as the empty folders they are (a link never hands a third
// user's files on); no answer names the owner's folders above the link; a
// file is served as an attachment and counts a download; an upload-only
// link answers nothing; a revoked link is refused on the connection that
// used it.
func TestLinkDAVStaysInside(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	env := drivetest.New(t, drivetest.Options{Clock: clock})
	alice := env.AddUser(t, "alice", 0)
	carol := env.AddUser(t, "carol", 0)
	d := env.Drive
	hs := httptest.NewServer(New(Config{Drive: d, Now: clock.Now}).Handler())
	t.Cleanup(hs.Close)
	ctx := context.Background()
	put := func(uid int64, p, body string) {
		t.Helper()
		if _, _, err := d.PutFile(ctx, uid, p, drive.PutOptions{Size: int64(len(body))}, strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.MkdirAll(ctx, alice.ID, "/hidden-owner-folder/pub/sub"); err != nil {
		t.Fatal(err)
	}
	put(alice.ID, "/hidden-owner-folder/pub/a.txt", "aaa")
	put(alice.ID, "/hidden-owner-folder/pub/sub/b.txt", "bbbb")
	put(alice.ID, "/hidden-owner-folder/secret.txt", "not shared")
	put(alice.ID, "/a.txt", "alice's other a.txt")
	put(carol.ID, "/carols/c.txt", "carol's")
	if _, err := d.ShareWithUser(ctx, carol.ID, "/carols", "alice", true); err != nil {
		t.Fatal(err)
	}
	if err := d.Move(ctx, alice.ID, "/carols", "/hidden-owner-folder/pub/carols", false); err != nil {
		t.Fatal(err)
	}
	link := func(p meta.LinkPerm, o drive.LinkOptions) string {
		o.Perm = p
		tok, _, err := d.CreateLink(ctx, alice.ID, "/hidden-owner-folder/pub", o)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ro, rw, up := link(meta.LinkRead, drive.LinkOptions{}), link(meta.LinkReadWrite, drive.LinkOptions{}), link(meta.LinkUpload, drive.LinkOptions{})
	c := &http.Client{Transport: &http.Transport{}}
	do := func(method, path, body string, hdr map[string]string) (int, string, http.Header) {
		t.Helper()
		req, _ := http.NewRequest(method, hs.URL+path, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if strings.HasPrefix(path, "/dav/") {
			req.SetBasicAuth("alice", drivetest.Password("alice"))
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(path, "/dav/") && (strings.Contains(string(b), "hidden-owner-folder") || strings.Contains(string(b), "not shared")) {
			t.Fatalf("%s %s names what is outside the link: %s", method, path, b)
		}
		return resp.StatusCode, string(b), resp.Header
	}
	pub := func(tok string) string { return "/public.php/dav/files/" + tok }
	aliceHas := func(p string) bool {
		_, err := d.Stat(ctx, alice.ID, p)
		return err == nil
	}

	// The owner's share entry inside: an empty folder through the link.
	st, body, _ := do("PROPFIND", pub(ro)+"/carols/", "", map[string]string{"Depth": "1"})
	if st != http.StatusMultiStatus || strings.Contains(body, "c.txt") {
		t.Fatalf("the owner's share entry through the link: %d %s", st, body)
	}
	if st, _, _ := do("GET", pub(ro)+"/carols/c.txt", "", nil); st != http.StatusNotFound {
		t.Fatalf("a file of a share the owner holds, through the link: %d", st)
	}

	// A read link: reads only.
	st, body, hd := do("GET", pub(ro)+"/a.txt", "", nil)
	if st != http.StatusOK || body != "aaa" || !strings.HasPrefix(hd.Get("Content-Disposition"), "attachment") {
		t.Fatalf("GET through a read link: %d %q %q", st, body, hd.Get("Content-Disposition"))
	}
	for _, m := range []string{"PUT", "DELETE", "MKCOL", "PROPPATCH", "LOCK", "SEARCH"} {
		if st, _, _ := do(m, pub(ro)+"/a.txt", "", nil); st != http.StatusForbidden {
			t.Fatalf("%s through a read link: %d", m, st)
		}
	}

	// A read-write link: writes, inside only.
	if st, _, _ := do("PUT", pub(rw)+"/new.txt", "new", nil); st != http.StatusCreated || !aliceHas("/hidden-owner-folder/pub/new.txt") {
		t.Fatalf("PUT through a read-write link: %d", st)
	}
	for _, m := range []string{"LOCK", "UNLOCK", "SEARCH", "POST"} {
		if st, _, _ := do(m, pub(rw)+"/a.txt", "", nil); st != http.StatusForbidden {
			t.Fatalf("%s through a read-write link: %d", m, st)
		}
	}
	for _, r := range []struct{ method, path, dst string }{
		{"DELETE", "/", ""},
		{"PUT", "/", ""},
		{"MOVE", "/", pub(rw) + "/sub/root"},
		{"MOVE", "/new.txt", pub(rw) + "/"},
		{"COPY", "/new.txt", pub(rw) + "/"},
		{"MOVE", "/new.txt", "/dav/stolen.txt"},
		{"COPY", "/new.txt", hs.URL + "/dav/stolen.txt"},
		{"MOVE", "/new.txt", pub(ro) + "/stolen.txt"},
		{"COPY", "/sub", pub(rw) + "/../../stolen"},
		{"COPY", "/sub", pub(rw) + "/%2e%2e/stolen"},
		{"COPY", "/%2e%2e/secret.txt", pub(rw) + "/stolen.txt"},
	} {
		hdr := map[string]string{}
		if r.dst != "" {
			hdr["Destination"] = r.dst
		}
		if st, _, _ := do(r.method, pub(rw)+r.path, "x", hdr); st < 400 {
			t.Fatalf("%s %s (Destination %q) through a read-write link: %d", r.method, r.path, r.dst, st)
		}
	}
	if !aliceHas("/hidden-owner-folder/pub/new.txt") || aliceHas("/stolen.txt") || aliceHas("/hidden-owner-folder/stolen") || aliceHas("/hidden-owner-folder/pub/sub/root") {
		t.Fatal("a refused MOVE or COPY changed alice's tree")
	}
	if st, _, _ := do("DELETE", pub(rw)+"/new.txt", "", nil); st != http.StatusNoContent || aliceHas("/hidden-owner-folder/pub/new.txt") {
		t.Fatalf("DELETE through a read-write link: %d", st)
	}
	if _, err := d.TrashItemAt(ctx, alice.ID, "/hidden-owner-folder/pub/new.txt"); err != nil {
		t.Fatalf("alice's trash after a delete through the link: %v", err)
	}

	// The owner's lock binds the link, whose visitor never sees its token.
	lockBody := `<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`
	st, _, hd = do("LOCK", "/dav/hidden-owner-folder/pub/a.txt", lockBody, map[string]string{"Timeout": "Second-600"})
	token := hd.Get("Lock-Token")
	if st != http.StatusOK || token == "" {
		t.Fatalf("alice's LOCK: %d", st)
	}
	if st, _, _ := do("PUT", pub(rw)+"/a.txt", "overwritten", nil); st != http.StatusLocked {
		t.Fatalf("PUT through the link of a file alice locked: %d", st)
	}
	st, body, _ = do("PROPFIND", pub(rw)+"/a.txt", "", map[string]string{"Depth": "0"})
	if st != http.StatusMultiStatus || strings.Contains(body, strings.Trim(token, "<>")) {
		t.Fatalf("PROPFIND through the link of a file alice locked: %d %s", st, body)
	}
	// Alice's lock on her other /a.txt is not the link's /a.txt.
	if st, _, _ := do("UNLOCK", "/dav/hidden-owner-folder/pub/a.txt", "", map[string]string{"Lock-Token": token}); st != http.StatusNoContent {
		t.Fatalf("UNLOCK: %d", st)
	}
	st, _, hd = do("LOCK", "/dav/a.txt", lockBody, nil)
	if st != http.StatusOK {
		t.Fatalf("alice's LOCK of /a.txt: %d", st)
	}
	if st, _, _ := do("PUT", pub(rw)+"/a.txt", "through the link", nil); st != http.StatusNoContent {
		t.Fatalf("PUT through the link while alice locks her /a.txt: %d", st)
	}

	// An upload-only link is not served here; a revoked one is refused on
	// the connection that just used it.
	for _, m := range []string{"PROPFIND", "GET"} {
		if st, _, _ := do(m, pub(up)+"/", "", map[string]string{"Depth": "1"}); st != http.StatusForbidden {
			t.Fatalf("%s through an upload-only link: %d", m, st)
		}
	}
	links, err := d.Links(ctx, alice.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st, _, _ := do("PROPFIND", pub(ro)+"/", "", map[string]string{"Depth": "1"}); st != http.StatusMultiStatus {
		t.Fatalf("PROPFIND through the read link: %d", st)
	}
	if err := d.RevokeLink(ctx, alice.ID, links[0].ID); err != nil {
		t.Fatal(err)
	}
	if st, body, _ := do("PROPFIND", pub(ro)+"/", "", map[string]string{"Depth": "1"}); st != http.StatusNotFound || strings.Contains(body, "a.txt") {
		t.Fatalf("PROPFIND through a revoked link: %d %s", st, body)
	}

	// A download bound counts whole GETs through WebDAV too.
	one := link(meta.LinkRead, drive.LinkOptions{MaxDownloads: 1})
	if st, _, _ := do("GET", pub(one)+"/a.txt", "", map[string]string{"Range": "bytes=0-0"}); st != http.StatusPartialContent {
		t.Fatalf("ranged GET: %d", st)
	}
	if st, _, _ := do("GET", pub(one)+"/a.txt", "", nil); st != http.StatusOK {
		t.Fatalf("first GET: %d", st)
	}
	if st, body, _ := do("GET", pub(one)+"/a.txt", "", nil); st != http.StatusNotFound || body != "no such link\n" {
		t.Fatalf("GET past the download bound: %d %q", st, body)
	}
}

// oc:permissions tell a sync client what it may change: everything of
// the user's own and of a writable share or link, nothing (G, read) in a
// read-only share or through a read link, at every depth, in the user's
// root (where entries of both kinds sit beside their own files) too.
func TestSharedPermissions(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_800_000_000, 0))
	env := drivetest.New(t, drivetest.Options{Clock: clock})
	alice := env.AddUser(t, "alice", 0)
	bob := env.AddUser(t, "bob", 0)
	d := env.Drive
	hs := httptest.NewServer(New(Config{Drive: d, Now: clock.Now}).Handler())
	t.Cleanup(hs.Close)
	ctx := context.Background()
	for _, p := range []string{"/ro/in.txt", "/rw/in.txt"} {
		if _, _, err := d.PutFile(ctx, alice.ID, p, drive.PutOptions{Size: 1}, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := d.PutFile(ctx, bob.ID, "/mine.txt", drive.PutOptions{Size: 1}, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ShareWithUser(ctx, alice.ID, "/ro", "bob", false); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ShareWithUser(ctx, alice.ID, "/rw", "bob", true); err != nil {
		t.Fatal(err)
	}
	roTok, _, err := d.CreateLink(ctx, alice.ID, "/ro", drive.LinkOptions{Perm: meta.LinkRead})
	if err != nil {
		t.Fatal(err)
	}
	rwTok, _, err := d.CreateLink(ctx, alice.ID, "/rw", drive.LinkOptions{Perm: meta.LinkReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	body := `<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:permissions/></d:prop></d:propfind>`
	re := regexp.MustCompile(`<D:href>([^<]*)</D:href><D:propstat><D:prop><permissions xmlns="http://owncloud.org/ns">([A-Z]*)</permissions>`)
	perms := func(user, path, depth string) map[string]string {
		t.Helper()
		req, _ := http.NewRequest("PROPFIND", hs.URL+path, strings.NewReader(body))
		req.Header.Set("Depth", depth)
		if user != "" {
			req.SetBasicAuth(user, drivetest.Password(user))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out := map[string]string{}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = m[2]
		}
		return out
	}
	want := map[string]string{
		"/dav/": "RGDNVCK", "/dav/mine.txt": "RGDNVW",
		"/dav/ro/": "G", "/dav/ro/in.txt": "G",
		"/dav/rw/": "RGDNVCK", "/dav/rw/in.txt": "RGDNVW",
	}
	got := perms("bob", "/dav/", "1")
	for _, p := range []string{"/dav/ro/", "/dav/rw/"} {
		for k, v := range perms("bob", p, "1") {
			got[k] = v
		}
	}
	for _, p := range []string{"/dav/ro/in.txt", "/dav/rw/in.txt", "/dav/ro/"} {
		if v := perms("bob", p, "0")[p]; v != want[p] {
			t.Errorf("Depth 0 %s: oc:permissions %q, want %q", p, v, want[p])
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("bob's %s: oc:permissions %q, want %q", k, got[k], v)
		}
	}
	for tok, w := range map[string]string{roTok: "G", rwTok: "RGDNVW"} {
		p := "/public.php/dav/files/" + tok + "/in.txt"
		if v := perms("", "/public.php/dav/files/"+tok+"/", "1")[p]; v != w {
			t.Errorf("%s: oc:permissions %q, want %q", p, v, w)
		}
	}
}
