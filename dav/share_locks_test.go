package dav

import (
	"context"
	"strings"
	"testing"

	"netdisk/errs"
)

// A WebDAV lock on a path inside a share is a lock on the owner's
// resource, whoever takes it: bob's lock through alice's writable share
// binds alice (WebDAV and the drive's other surfaces) and carol, another
// recipient; alice's binds bob. Each sees the lock in their own terms
// (lockroot), its token only when it is theirs, and nobody learns the
// owner's folder names from a refusal.
func TestShareLocksBindOwnerAndRecipients(t *testing.T) {
	e := startLockEnv(t)
	ctx := context.Background()
	alice := e.users["alice"].ID
	e.want(201, "alice", "MKCOL", "/dav/Projects", "")
	e.want(201, "alice", "MKCOL", "/dav/Projects/x", "")
	e.want(201, "alice", "PUT", "/dav/Projects/x/f.txt", "v1")
	for _, to := range []string{"bob", "carol"} {
		if _, err := e.h.D.ShareWithUser(ctx, alice, "/Projects/x", to, true); err != nil {
			t.Fatal(err)
		}
	}

	// Bob locks the file through his entry.
	r := e.want(200, "bob", "LOCK", "/dav/x/f.txt", lockExclusive, "Depth: 0")
	tok := strings.Trim(r.hdr.Get("Lock-Token"), "<>")
	if !strings.Contains(r.body, "<D:lockroot><D:href>/dav/x/f.txt</D:href>") || !strings.Contains(r.body, tok) {
		t.Fatalf("bob's LOCK answer, in his terms with his token:\n%s", r.body)
	}
	// It binds the owner and the other recipient, on WebDAV and the drive.
	e.want(423, "alice", "PUT", "/dav/Projects/x/f.txt", "v2")
	e.want(423, "alice", "DELETE", "/dav/Projects/x", "")
	e.want(423, "alice", "MOVE", "/dav/Projects", "", "Destination: /dav/P2")
	e.want(423, "carol", "PUT", "/dav/x/f.txt", "v2")
	if err := e.h.D.Remove(ctx, alice, "/Projects/x/f.txt"); !errs.Is(err, errs.Locked) {
		t.Fatalf("alice's delete through the drive under bob's lock: %v", err)
	}
	if err := e.h.D.Remove(ctx, e.users["carol"].ID, "/x/f.txt"); !errs.Is(err, errs.Locked) {
		t.Fatalf("carol's delete through the drive under bob's lock: %v", err)
	}
	// Alice and carol see it where they name the file, without its token.
	for _, c := range []struct{ user, path string }{{"alice", "/dav/Projects/x/f.txt"}, {"carol", "/dav/x/f.txt"}} {
		r := e.want(207, c.user, "PROPFIND", c.path, `<propfind xmlns="DAV:"><prop><lockdiscovery/></prop></propfind>`, "Depth: 0")
		if !strings.Contains(r.body, "<D:lockroot><D:href>"+c.path+"</D:href>") || strings.Contains(r.body, tok) {
			t.Fatalf("%s's lockdiscovery of bob's lock: want the root %s and no token:\n%s", c.user, c.path, r.body)
		}
	}
	// Bob's token is his way through.
	e.want(204, "bob", "PUT", "/dav/x/f.txt", "v2", "If: (<"+tok+">)")
	e.want(204, "bob", "UNLOCK", "/dav/x/f.txt", "", "Lock-Token: <"+tok+">")
	e.want(204, "alice", "PUT", "/dav/Projects/x/f.txt", "v3")

	// A new file locked through the share (an unmapped URL) is made in
	// alice's tree under the lock.
	nt := e.lock(201, "bob", "/dav/x/new.txt", lockExclusive, "Depth: 0")
	e.want(423, "alice", "PUT", "/dav/Projects/x/new.txt", "mine")
	e.want(204, "bob", "UNLOCK", "/dav/x/new.txt", "", "Lock-Token: <"+nt+">")

	// Alice's depth-infinity lock above the shared folder binds bob; he
	// sees it rooted at his entry, and neither the refusal nor the
	// lockdiscovery names her folders.
	at := e.lock(200, "alice", "/dav/Projects", lockExclusive, "Depth: infinity")
	for _, w := range []struct{ method, path, body string }{
		{"PUT", "/dav/x/f.txt", "v4"}, {"PUT", "/dav/x/g.txt", "new"}, {"DELETE", "/dav/x/f.txt", ""},
		{"MKCOL", "/dav/x/sub", ""}, {"LOCK", "/dav/x/f.txt", lockExclusive},
	} {
		r := e.want(423, "bob", w.method, w.path, w.body)
		if strings.Contains(r.body, "Projects") {
			t.Fatalf("bob's %s %s refused naming alice's folder: %s", w.method, w.path, r.body)
		}
	}
	if err := e.h.D.Remove(ctx, e.users["bob"].ID, "/x/f.txt"); !errs.Is(err, errs.Locked) || strings.Contains(errs.Message(err), "Projects") {
		t.Fatalf("bob's delete through the drive under alice's lock: %v", err)
	}
	r = e.want(207, "bob", "PROPFIND", "/dav/x/f.txt", `<propfind xmlns="DAV:"><prop><lockdiscovery/></prop></propfind>`, "Depth: 0")
	if !strings.Contains(r.body, "<D:lockroot><D:href>/dav/x</D:href>") || strings.Contains(r.body, at) || strings.Contains(r.body, "Projects") {
		t.Fatalf("bob's lockdiscovery of alice's lock: want the root /dav/x, no token, no folder names:\n%s", r.body)
	}
	// A listing of bob's root shows the lock on the entry.
	r = e.want(207, "bob", "PROPFIND", "/dav/", `<propfind xmlns="DAV:"><prop><lockdiscovery/></prop></propfind>`, "Depth: 1")
	if !strings.Contains(r.body, "<D:lockroot><D:href>/dav/x</D:href>") {
		t.Fatalf("bob's root listing lacks the lock on his entry:\n%s", r.body)
	}
	// Bob's entry itself is his: leaving it (DELETE) or renaming it is
	// not a write to alice's folder.
	e.want(201, "bob", "MOVE", "/dav/x", "", "Destination: /dav/y")
	e.want(204, "alice", "UNLOCK", "/dav/Projects", "", "Lock-Token: <"+at+">")
}

// A PROPFIND of depth infinity on the recipient's root lists the contents
// of a read-only share under their entry, and nothing of the owner's
// outside it.
func TestSharePropfindInfinity(t *testing.T) {
	e := startLockEnv(t)
	e.want(201, "alice", "MKCOL", "/dav/Projects", "")
	e.want(201, "alice", "MKCOL", "/dav/Projects/x", "")
	e.want(201, "alice", "PUT", "/dav/Projects/x/f.txt", "v1")
	e.want(201, "alice", "PUT", "/dav/Projects/other.txt", "v1")
	if _, err := e.h.D.ShareWithUser(context.Background(), e.users["alice"].ID, "/Projects/x", "bob", false); err != nil {
		t.Fatal(err)
	}
	r := e.want(207, "bob", "PROPFIND", "/dav/", `<propfind xmlns="DAV:"><prop><getcontentlength/></prop></propfind>`, "Depth: infinity")
	if !strings.Contains(r.body, "<D:href>/dav/x/f.txt</D:href>") || strings.Contains(r.body, "Projects") || strings.Contains(r.body, "other.txt") {
		t.Fatalf("bob's depth-infinity PROPFIND: want /dav/x/f.txt and nothing of alice's else:\n%s", r.body)
	}
}

// oc:size of a shared folder, and of a folder inside it, is the same total
// for the recipient as for the owner (summed in the owner's tree): the sync
// clients show it and compare it with the quota.
func TestShareOCSize(t *testing.T) {
	e := startLockEnv(t)
	e.want(201, "alice", "MKCOL", "/dav/Projects", "")
	e.want(201, "alice", "MKCOL", "/dav/Projects/sub", "")
	e.want(201, "alice", "PUT", "/dav/Projects/a.txt", "12345")
	e.want(201, "alice", "PUT", "/dav/Projects/sub/b.txt", "1234567")
	if _, err := e.h.D.ShareWithUser(context.Background(), e.users["alice"].ID, "/Projects", "bob", false); err != nil {
		t.Fatal(err)
	}
	const body = `<propfind xmlns="DAV:" xmlns:oc="http://owncloud.org/ns"><prop><oc:size/></prop></propfind>`
	size := func(user, path string) string {
		r := e.want(207, user, "PROPFIND", path, body, "Depth: 0")
		i := strings.Index(r.body, `<size xmlns="http://owncloud.org/ns">`)
		if i < 0 {
			t.Fatalf("%s's PROPFIND %s: no oc:size:\n%s", user, path, r.body)
		}
		v, _, _ := strings.Cut(r.body[i+len(`<size xmlns="http://owncloud.org/ns">`):], "<")
		return v
	}
	for _, c := range []struct{ alice, bob, want string }{
		{"/dav/Projects/", "/dav/Projects/", "12"},
		{"/dav/Projects/sub/", "/dav/Projects/sub/", "7"},
	} {
		if a, b := size("alice", c.alice), size("bob", c.bob); a != c.want || b != c.want {
			t.Errorf("oc:size of %s: alice %q, bob %q; want %s for both", c.alice, a, b, c.want)
		}
	}
}
