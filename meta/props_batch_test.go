package meta

import (
	"context"
	"testing"
	"time"
)

func TestListDirTreePropsUnder(t *testing.T) {
	ctx := context.Background()
	s, alice, bob := openAliceAndBob(t)
	now := time.Unix(1700000000, 0)
	for _, u := range []User{alice, bob} {
		for _, d := range []string{"/a", "/a/b", "/a/b/c", "/ab"} {
			if _, err := s.Mkdir(ctx, u.ID, d, now); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.CommitFile(ctx, u.ID, "/a/f", NewFile{Size: 3, FileHash: "x", ModTime: now, Mode: 0o600}); err != nil {
			t.Fatal(err)
		}
	}
	setProp := func(uid int64, p, local string) {
		n, err := s.Stat(ctx, uid, p)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.PatchProps(ctx, n.ID, []Prop{{Space: "urn:x", Local: local, InnerXML: "v"}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	setProp(alice.ID, "/a", "self")
	setProp(alice.ID, "/a/f", "child")
	setProp(alice.ID, "/a/b/c", "grandchild")
	setProp(alice.ID, "/ab", "sibling")
	setProp(bob.ID, "/a/f", "bobs")

	self, kids, err := s.ListDir(ctx, alice.ID, "/a")
	if err != nil || self.Path != "/a" || len(kids) != 2 || kids[0].Path != "/a/b" || kids[1].Path != "/a/f" {
		t.Fatalf("ListDir(/a) = %+v, %+v, %v", self, kids, err)
	}
	if f := kids[1]; f.IsDir || f.Size != 3 || f.Mode != 0o600 || !f.ModTime.Equal(now) || f.UserID != alice.ID || f.FileHash != "x" {
		t.Errorf("ListDir file node = %+v", f)
	}
	if self, kids, err := s.ListDir(ctx, alice.ID, "/a/f"); err != nil || self.IsDir || kids != nil {
		t.Errorf("ListDir of a file = %+v, %v, %v", self, kids, err)
	}
	tree, err := s.Tree(ctx, alice.ID, "/a", 10)
	if err != nil || len(tree) != 3 || tree[0].Path != "/a/b" || tree[1].Path != "/a/b/c" || tree[2].Path != "/a/f" {
		t.Fatalf("Tree(/a) = %+v, %v", tree, err)
	}
	if tree, _ := s.Tree(ctx, alice.ID, "/a", 1); len(tree) != 2 {
		t.Errorf("Tree with limit 1 returned %d nodes, want limit+1", len(tree))
	}
	count := func(m map[int64][]Prop) (names []string) {
		for _, ps := range m {
			for _, p := range ps {
				names = append(names, p.Local)
			}
		}
		return names
	}
	m, err := s.PropsUnder(ctx, alice.ID, "/a", false)
	if got := count(m); err != nil || len(got) != 2 {
		t.Errorf("PropsUnder(/a, children) = %v, %v; want self and child", got, err)
	}
	m, err = s.PropsUnder(ctx, alice.ID, "/a", true)
	if got := count(m); err != nil || len(got) != 3 {
		t.Errorf("PropsUnder(/a, subtree) = %v, %v; want self, child, grandchild (not /ab, not bob's)", got, err)
	}
}
