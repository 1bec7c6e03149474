package dav

import (
	"context"
	"testing"
)

// A WebDAV MOVE across a share's boundary moves: out of a writable share
// into the recipient's own tree, into it, and between two owners' shares,
// each source in its owner's trash; one past the destination owner's
// quota is 507 and one out of a read-only share 403, with nothing changed.
func TestShareMoveAcross(t *testing.T) {
	e := startLockEnv(t)
	ctx := context.Background()
	d := e.h.D
	e.want(201, "alice", "MKCOL", "/dav/Projects", "")
	e.want(201, "alice", "PUT", "/dav/Projects/f.txt", "alice's file")
	e.want(201, "alice", "MKCOL", "/dav/RO", "")
	e.want(201, "alice", "PUT", "/dav/RO/r.txt", "read only")
	e.want(201, "carol", "MKCOL", "/dav/Inbox", "")
	e.want(201, "bob", "MKCOL", "/dav/mine", "")
	e.want(201, "bob", "PUT", "/dav/mine/b.txt", "bob's file")
	for _, s := range []struct {
		owner, path string
		write       bool
	}{{"alice", "/Projects", true}, {"alice", "/RO", false}, {"carol", "/Inbox", true}} {
		if _, err := d.ShareWithUser(ctx, e.users[s.owner].ID, s.path, "bob", s.write); err != nil {
			t.Fatal(err)
		}
	}

	e.want(201, "bob", "MOVE", "/dav/Projects/f.txt", "", "Destination: /dav/f.txt")
	if r := e.want(200, "bob", "GET", "/dav/f.txt", ""); r.body != "alice's file" {
		t.Fatalf("bob's f.txt: %q", r.body)
	}
	e.want(404, "alice", "GET", "/dav/Projects/f.txt", "")
	if _, err := d.TrashItemAt(ctx, e.users["alice"].ID, "/Projects/f.txt"); err != nil {
		t.Fatalf("alice's f.txt is not in her trash: %v", err)
	}

	e.want(201, "bob", "MOVE", "/dav/mine", "", "Destination: /dav/Projects/mine")
	if r := e.want(200, "alice", "GET", "/dav/Projects/mine/b.txt", ""); r.body != "bob's file" {
		t.Fatalf("alice's b.txt: %q", r.body)
	}
	e.want(404, "bob", "PROPFIND", "/dav/mine", "", "Depth: 0")

	e.want(201, "bob", "MOVE", "/dav/Projects/mine", "", "Destination: /dav/Inbox/mine")
	if r := e.want(200, "carol", "GET", "/dav/Inbox/mine/b.txt", ""); r.body != "bob's file" {
		t.Fatalf("carol's b.txt: %q", r.body)
	}
	e.want(404, "alice", "PROPFIND", "/dav/Projects/mine", "", "Depth: 0")

	q, err := d.QuotaOf(ctx, e.users["alice"].ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetQuota(ctx, "alice", q.Finished+q.Metadata+4); err != nil {
		t.Fatal(err)
	}
	e.want(507, "bob", "MOVE", "/dav/f.txt", "", "Destination: /dav/Projects/f.txt")
	e.want(200, "bob", "GET", "/dav/f.txt", "")
	e.want(404, "alice", "GET", "/dav/Projects/f.txt", "")

	e.want(403, "bob", "MOVE", "/dav/RO/r.txt", "", "Destination: /dav/r.txt")
	e.want(404, "bob", "GET", "/dav/r.txt", "")
	e.want(200, "alice", "GET", "/dav/RO/r.txt", "")
}
