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
