package drive_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
)

func wantKind(t *testing.T, what string, err error, k errs.Kind) {
	t.Helper()
	if !errs.Is(err, k) {
		t.Fatalf("%s: %v (kind %v), want %v", what, err, errs.KindOf(err), k)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// shareFixture: alice's /docs (a.txt, sub/b.txt) beside her /secret.txt,
// shared with bob, who has his own /own.txt.
func shareFixture(t *testing.T, write bool) (*fixture, meta.Share) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.d.Mkdir(ctx, f.a.ID, "/docs")
	must(t, err)
	_, err = f.d.Mkdir(ctx, f.a.ID, "/docs/sub")
	must(t, err)
	f.put(t, f.a.ID, "/docs/a.txt", []byte("alpha"))
	f.put(t, f.a.ID, "/docs/sub/b.txt", random(1, 3000))
	f.put(t, f.a.ID, "/secret.txt", []byte("alice only"))
	f.put(t, f.b.ID, "/own.txt", random(2, 2500))
	s, err := f.d.ShareWithUser(ctx, f.a.ID, "/docs", "bob", write)
	must(t, err)
	return f, s
}

// A read-only share: bob sees alice's folder in his root at its name, reads
// it through every read call, and every write is ReadOnly; nothing above
// the shared folder is reachable, whatever the path says.
func TestShareReadOnly(t *testing.T) {
	f, _ := shareFixture(t, false)
	ctx := context.Background()
	b := f.b.ID

	root, err := f.d.List(ctx, b, "/")
	must(t, err)
	var names []string
	for _, n := range root {
		names = append(names, n.Path)
	}
	if strings.Join(names, " ") != "/docs /own.txt" {
		t.Fatalf("bob's root: %v", names)
	}
	if !root[0].IsDir {
		t.Fatalf("the entry is not a folder: %+v", root[0])
	}
	n, err := f.d.Stat(ctx, b, "/docs/sub/b.txt")
	must(t, err)
	if n.Path != "/docs/sub/b.txt" || n.Size != 3000 {
		t.Fatalf("stat through the share: %+v", n)
	}
	if got := f.get(t, b, "/docs/sub/b.txt"); !bytes.Equal(got, random(1, 3000)) {
		t.Fatal("content read through the share differs")
	}
	dir, kids, err := f.d.ListDir(ctx, b, "/docs")
	must(t, err)
	if dir.Path != "/docs" || len(kids) != 2 || kids[0].Path != "/docs/a.txt" || kids[1].Path != "/docs/sub" {
		t.Fatalf("ListDir through the share: %+v %+v", dir, kids)
	}
	tree, err := f.d.Tree(ctx, b, "/docs", 100)
	must(t, err)
	for _, n := range tree {
		if !strings.HasPrefix(n.Path, "/docs/") {
			t.Fatalf("tree through the share names %q", n.Path)
		}
	}

	// Every write through the share is refused as read-only.
	_, err = f.d.Create(ctx, b, "/docs/new.txt", drive.WriteOptions{ExpectedSize: 1})
	wantKind(t, "Create", err, errs.ReadOnly)
	_, _, err = f.d.PutFile(ctx, b, "/docs/a.txt", drive.PutOptions{Size: 1}, strings.NewReader("x"))
	wantKind(t, "PutFile", err, errs.ReadOnly)
	_, err = f.d.Mkdir(ctx, b, "/docs/d")
	wantKind(t, "Mkdir", err, errs.ReadOnly)
	wantKind(t, "MkdirAll", f.d.MkdirAll(ctx, b, "/docs/d/e"), errs.ReadOnly)
	wantKind(t, "Remove", f.d.Remove(ctx, b, "/docs/a.txt"), errs.ReadOnly)
	wantKind(t, "Move inside", f.d.Move(ctx, b, "/docs/a.txt", "/docs/c.txt", false), errs.ReadOnly)
	wantKind(t, "Copy inside", f.d.Copy(ctx, b, "/docs/a.txt", "/docs/c.txt", false, true), errs.ReadOnly)
	wantKind(t, "Copy in", f.d.Copy(ctx, b, "/own.txt", "/docs/own.txt", false, true), errs.ReadOnly)
	wantKind(t, "SetModTime", f.d.SetModTime(ctx, b, "/docs/a.txt", f.d.Now()), errs.ReadOnly)
	wantKind(t, "SetMode", f.d.SetMode(ctx, b, "/docs/a.txt", 0o600), errs.ReadOnly)
	wantKind(t, "PatchProps", f.d.PatchProps(ctx, b, "/docs/a.txt", []meta.Prop{{Space: "x:", Local: "p", InnerXML: "v"}}, nil), errs.ReadOnly)
	_, err = f.d.Symlink(ctx, b, "/docs/l", "a.txt")
	wantKind(t, "Symlink", err, errs.ReadOnly)
	wantKind(t, "CheckWrite", f.d.CheckWrite(ctx, b, "/docs/a.txt"), errs.ReadOnly)
	if got := f.get(t, f.a.ID, "/docs/a.txt"); string(got) != "alpha" {
		t.Fatalf("alice's file changed: %q", got)
	}

	// Nothing outside the shared folder: ".." is cleaned within bob's own
	// tree, never the owner's.
	for _, p := range []string{"/docs/../secret.txt", "/docs/sub/../../secret.txt", "/secret.txt", "/docs/secret.txt"} {
		if _, err := f.d.Stat(ctx, b, p); !errs.Is(err, errs.NotFound) && !errs.Is(err, errs.Invalid) {
			t.Fatalf("bob reached %q: %v", p, err)
		}
	}
	// Errors name bob's paths, never alice's folders.
	_, err = f.d.Stat(ctx, b, "/docs/nope")
	if e := errs.Message(err); strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "/docs/nope") {
		t.Fatalf("error through the share: %v (%s)", err, e)
	}
	// A copy out takes the chunk references, charged to bob.
	q0, err := f.d.QuotaOf(ctx, b)
	must(t, err)
	must(t, f.d.Copy(ctx, b, "/docs/sub", "/mine", false, true))
	if got := f.get(t, b, "/mine/b.txt"); !bytes.Equal(got, random(1, 3000)) {
		t.Fatal("copy out of the share differs")
	}
	q1, err := f.d.QuotaOf(ctx, b)
	must(t, err)
	if q1.Finished-q0.Finished != 3000 {
		t.Fatalf("bob's finished bytes grew by %d, want 3000", q1.Finished-q0.Finished)
	}
	// A move out of (or into) a share is a copy and a delete for the client.
	wantKind(t, "Move out", f.d.Move(ctx, b, "/docs/a.txt", "/a.txt", false), errs.ReadOnly)
	wantKind(t, "Move in", f.d.Move(ctx, b, "/own.txt", "/docs/own.txt", false), errs.ReadOnly)
}

// A writable share: bob's writes are alice's (her quota, her trash, her
// versions); bob's quota is untouched.
func TestShareWritable(t *testing.T) {
	f, _ := shareFixture(t, true)
	ctx := context.Background()
	a, b := f.a.ID, f.b.ID
	qa0, _ := f.d.QuotaOf(ctx, a)
	qb0, _ := f.d.QuotaOf(ctx, b)

	n := f.put(t, b, "/docs/sub/new.bin", random(3, 4000))
	if n.Path != "/docs/sub/new.bin" {
		t.Fatalf("committed node in bob's view: %q", n.Path)
	}
	if got := f.get(t, a, "/docs/sub/new.bin"); !bytes.Equal(got, random(3, 4000)) {
		t.Fatal("alice does not see bob's write")
	}
	_, _, err := f.d.PutFile(ctx, b, "/docs/deep/er/p.txt", drive.PutOptions{Size: 3}, strings.NewReader("put"))
	must(t, err)
	if got := f.get(t, a, "/docs/deep/er/p.txt"); string(got) != "put" {
		t.Fatalf("PutFile through the share: %q", got)
	}
	f.put(t, b, "/docs/a.txt", []byte("alpha two"))
	_, vs, err := f.d.FileVersions(ctx, a, "/docs/a.txt")
	must(t, err)
	if len(vs) != 1 {
		t.Fatalf("alice's versions of a.txt: %d, want 1", len(vs))
	}
	must(t, f.d.Remove(ctx, b, "/docs/sub/b.txt"))
	if _, err := f.d.TrashItemAt(ctx, a, "/docs/sub/b.txt"); err != nil {
		t.Fatalf("bob's delete is not in alice's trash: %v", err)
	}
	must(t, f.d.Move(ctx, b, "/docs/sub/new.bin", "/docs/moved.bin", false))
	if _, err := f.d.Stat(ctx, a, "/docs/moved.bin"); err != nil {
		t.Fatal(err)
	}
	// bob's own file into the share: a copy, charged to alice.
	must(t, f.d.Copy(ctx, b, "/own.txt", "/docs/own.txt", false, false))

	qa1, _ := f.d.QuotaOf(ctx, a)
	qb1, _ := f.d.QuotaOf(ctx, b)
	if qb1.Finished != qb0.Finished {
		t.Fatalf("bob's finished bytes moved: %d → %d", qb0.Finished, qb1.Finished)
	}
	// new.bin 4000 + p.txt 3 + a.txt grows by 4 + own.txt 2500 − b.txt 3000 (trash)
	if got := qa1.Finished - qa0.Finished; got != 4000+3+4+2500-3000 {
		t.Fatalf("alice's finished bytes grew by %d", got)
	}

	// Alice's quota bounds bob's writes into her share.
	must(t, f.d.SetQuota(ctx, "alice", qa1.Finished+qa1.Metadata+1000))
	_, err = f.d.Create(ctx, b, "/docs/big.bin", drive.WriteOptions{ExpectedSize: 5000})
	wantKind(t, "a write past the owner's quota", err, errs.Quota)
	wantKind(t, "a copy past the owner's quota", f.d.Copy(ctx, b, "/own.txt", "/docs/own2.txt", false, true), errs.Quota)
}

// The share follows the node: the owner's move keeps bob's view; bob's
// rename changes only his; removing the entry leaves the share; a revoke
// and the owner's delete end it at once.
func TestShareFollowsAndEnds(t *testing.T) {
	f, s := shareFixture(t, false)
	ctx := context.Background()
	a, b := f.a.ID, f.b.ID
	_, err := f.d.Mkdir(ctx, a, "/archive")
	must(t, err)
	must(t, f.d.Move(ctx, a, "/docs", "/archive/docs", false))
	if got := f.get(t, b, "/docs/a.txt"); string(got) != "alpha" {
		t.Fatalf("after the owner's move: %q", got)
	}
	must(t, f.d.Move(ctx, b, "/docs", "/from-alice", false))
	if got := f.get(t, b, "/from-alice/a.txt"); string(got) != "alpha" {
		t.Fatalf("after bob's rename: %q", got)
	}
	if _, err := f.d.Stat(ctx, a, "/archive/docs/a.txt"); err != nil {
		t.Fatalf("bob's rename changed alice's tree: %v", err)
	}
	// In alice's trash: nothing answers; restored: back.
	must(t, f.d.Remove(ctx, a, "/archive/docs"))
	if _, err := f.d.Stat(ctx, b, "/from-alice/a.txt"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a share of a deleted folder answers: %v", err)
	}
	if root, _ := f.d.List(ctx, b, "/"); len(root) != 1 {
		t.Fatalf("bob's root lists the entry of a deleted folder: %+v", root)
	}
	it, err := f.d.TrashItemAt(ctx, a, "/archive/docs")
	must(t, err)
	_, err = f.d.RestoreTrash(ctx, a, it.ID)
	must(t, err)
	if _, err := f.d.Stat(ctx, b, "/from-alice/a.txt"); err != nil {
		t.Fatalf("after the restore: %v", err)
	}
	// Revoked: gone at once.
	must(t, f.d.Unshare(ctx, a, s.ID))
	if _, err := f.d.Stat(ctx, b, "/from-alice/a.txt"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a revoked share answers: %v", err)
	}
	if _, err := f.d.Stat(ctx, b, "/from-alice"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a revoked share's entry stays: %v", err)
	}
	// Shared again and left: alice's folder stays.
	_, err = f.d.ShareWithUser(ctx, a, "/archive/docs", "bob", false)
	must(t, err)
	must(t, f.d.Remove(ctx, b, "/docs"))
	if _, err := f.d.Stat(ctx, b, "/docs"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("after leaving: %v", err)
	}
	if _, err := f.d.Stat(ctx, a, "/archive/docs/a.txt"); err != nil {
		t.Fatalf("leaving removed alice's folder: %v", err)
	}
	// Nobody reshares what was shared with them.
	_, err = f.d.ShareWithUser(ctx, a, "/archive/docs", "bob", false)
	must(t, err)
	_, err = f.d.ShareWithUser(ctx, b, "/docs", "alice", false)
	wantKind(t, "resharing", err, errs.Permission)
}

// Groups: a member sees the group's shares, one added later too; a member
// removed loses access at their next request.
func TestShareGroup(t *testing.T) {
	f, _ := shareFixture(t, false)
	ctx := context.Background()
	carol, err := f.d.AddUser(ctx, "carol", "pw-carol", false, 0)
	must(t, err)
	_, err = f.d.AddGroup(ctx, "team")
	must(t, err)
	must(t, f.d.AddGroupMember(ctx, "team", "bob"))
	_, err = f.d.ShareWithGroup(ctx, f.a.ID, "/docs/sub", "team", true)
	must(t, err)
	if _, err := f.d.Stat(ctx, f.b.ID, "/sub/b.txt"); err != nil {
		t.Fatalf("bob through the group: %v", err)
	}
	must(t, f.d.AddGroupMember(ctx, "team", "carol"))
	f.put(t, carol.ID, "/sub/c.txt", []byte("carol"))
	if got := f.get(t, f.a.ID, "/docs/sub/c.txt"); string(got) != "carol" {
		t.Fatalf("carol's write: %q", got)
	}
	must(t, f.d.RemoveGroupMember(ctx, "team", "carol"))
	if _, err := f.d.Stat(ctx, carol.ID, "/sub/b.txt"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a removed member still reads: %v", err)
	}
	if _, err := f.d.Create(ctx, carol.ID, "/sub/d.txt", drive.WriteOptions{ExpectedSize: 1}); err == nil {
		t.Fatal("a removed member still writes")
	}
	if _, err := f.d.Stat(ctx, f.b.ID, "/sub/b.txt"); err != nil {
		t.Fatalf("bob lost the group's share: %v", err)
	}
}

// A walk of the recipient's tree (PROPFIND depth infinity) descends into
// their entries, read-only ones included, in their terms; an entry the
// owner has inside the shared folder (bob's folder shared back to alice)
// is the empty folder it is in her tree: no loop, nothing of bob's twice.
func TestShareTreeWalksEntries(t *testing.T) {
	f, _ := shareFixture(t, false)
	ctx := context.Background()
	a, b := f.a.ID, f.b.ID
	_, err := f.d.Mkdir(ctx, b, "/back")
	must(t, err)
	f.put(t, b, "/back/c.txt", []byte("bob's"))
	_, err = f.d.ShareWithUser(ctx, b, "/back", "alice", true)
	must(t, err)
	// Alice moves her entry of bob's folder into the folder she shares
	// with him.
	must(t, f.d.Move(ctx, a, "/back", "/docs/back", false))

	tree, err := f.d.Tree(ctx, b, "/", 100)
	must(t, err)
	var got []string
	for _, n := range tree {
		got = append(got, n.Path)
	}
	want := "/back /back/c.txt /docs /docs/a.txt /docs/back /docs/sub /docs/sub/b.txt /own.txt"
	if strings.Join(got, " ") != want {
		t.Fatalf("bob's tree:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	sub, err := f.d.Tree(ctx, b, "/docs", 100)
	must(t, err)
	if len(sub) != 4 || sub[0].Path != "/docs/a.txt" {
		t.Fatalf("bob's tree of his entry: %+v", sub)
	}
}

// Search finds names inside the shares a user receives (read-only ones
// included) at the user's paths, the same nodes a walk of their tree
// reaches: their renamed entry by its name in their tree, never the
// owner's folder name; a node reached through two entries (a folder shared
// and a folder inside it shared too) once; a share given back into the
// owner's folder without a loop; a shared file among files only; and the
// pages of a small limit add up to the whole answer.
func TestShareSearch(t *testing.T) {
	f, _ := shareFixture(t, false)
	ctx := context.Background()
	a, b := f.a.ID, f.b.ID
	for i := range 4 {
		f.put(t, a, fmt.Sprintf("/docs/sub/more%d.txt", i), []byte("x"))
		f.put(t, b, fmt.Sprintf("/mine%d.txt", i), []byte("y"))
	}
	f.put(t, a, "/note.txt", []byte("a note"))
	_, err := f.d.ShareWithUser(ctx, a, "/note.txt", "bob", false)
	must(t, err)
	_, err = f.d.ShareWithUser(ctx, a, "/docs/sub", "bob", false)
	must(t, err)
	must(t, f.d.Move(ctx, b, "/docs", "/from-alice", false))
	_, err = f.d.Mkdir(ctx, b, "/back")
	must(t, err)
	f.put(t, b, "/back/c.txt", []byte("bob's"))
	_, err = f.d.ShareWithUser(ctx, b, "/back", "alice", true)
	must(t, err)
	must(t, f.d.Move(ctx, a, "/back", "/docs/back", false))

	// Every page of two, in order, and the cursor of each.
	all := func(q drive.SearchQuery) []meta.Node {
		t.Helper()
		var out []meta.Node
		for {
			page, err := f.d.Search(ctx, b, q)
			must(t, err)
			if len(page.Hits) > q.Limit {
				t.Fatalf("page of %d hits over limit %d", len(page.Hits), q.Limit)
			}
			out = append(out, page.Hits...)
			if page.Next == "" {
				return out
			}
			q.Cursor = page.Next
		}
	}
	paths := func(ns []meta.Node) string {
		var s []string
		for _, n := range ns {
			s = append(s, n.Path)
		}
		slices.Sort(s)
		return strings.Join(s, " ")
	}

	// The walk of bob's tree is what search reaches: every node once.
	tree, err := f.d.Tree(ctx, b, "/", 1000)
	must(t, err)
	treeAt := map[string]int64{}
	treeIDs := map[int64]bool{}
	for _, n := range tree {
		treeAt[n.Path], treeIDs[n.ID] = n.ID, true
	}
	everything := all(drive.SearchQuery{Pattern: "*", Glob: true, Limit: 2})
	seen := map[int64]bool{}
	for i, n := range everything {
		if seen[n.ID] {
			t.Fatalf("%s (node %d) found twice", n.Path, n.ID)
		}
		seen[n.ID] = true
		if id, ok := treeAt[n.Path]; !ok || id != n.ID {
			t.Fatalf("hit %s (node %d) is not where bob's tree has it", n.Path, n.ID)
		}
		if i > 0 && meta.PosOf(everything[i-1]).Follows(meta.PosOf(n)) {
			t.Fatalf("hits out of order at %s", n.Path)
		}
	}
	if len(seen) != len(treeIDs) {
		t.Fatalf("search found %d nodes, bob's tree has %d: %s", len(seen), len(treeIDs), paths(everything))
	}
	whole, err := f.d.Search(ctx, b, drive.SearchQuery{Pattern: "*", Glob: true, Limit: 1000})
	must(t, err)
	if paths(whole.Hits) != paths(everything) {
		t.Fatalf("pages of two:\n %s\none page:\n %s", paths(everything), paths(whole.Hits))
	}

	for _, c := range []struct {
		q    drive.SearchQuery
		want string
	}{
		{drive.SearchQuery{Pattern: "b.txt"}, "/sub/b.txt"},
		{drive.SearchQuery{Pattern: "a.txt", Limit: 1}, "/from-alice/a.txt"},
		{drive.SearchQuery{Pattern: "FROM-"}, "/from-alice"},
		{drive.SearchQuery{Pattern: "docs"}, ""},
		{drive.SearchQuery{Pattern: "secret"}, ""},
		{drive.SearchQuery{Pattern: "back"}, "/back /from-alice/back"},
		{drive.SearchQuery{Pattern: "c.txt"}, "/back/c.txt"},
		{drive.SearchQuery{Pattern: "note", FilesOnly: true}, "/note.txt"},
		{drive.SearchQuery{Pattern: "more?.txt", Glob: true, Limit: 3}, "/sub/more0.txt /sub/more1.txt /sub/more2.txt /sub/more3.txt"},
		{drive.SearchQuery{Pattern: "txt", Under: "/from-alice/sub", Limit: 2}, "/from-alice/sub/b.txt /from-alice/sub/more0.txt /from-alice/sub/more1.txt /from-alice/sub/more2.txt /from-alice/sub/more3.txt"},
		{drive.SearchQuery{Pattern: ".txt", Under: "/from-alice", Limit: 2}, "/from-alice/a.txt /from-alice/sub/b.txt /from-alice/sub/more0.txt /from-alice/sub/more1.txt /from-alice/sub/more2.txt /from-alice/sub/more3.txt"},
		{drive.SearchQuery{Pattern: "mine", Limit: 3}, "/mine0.txt /mine1.txt /mine2.txt /mine3.txt"},
	} {
		if c.q.Limit == 0 {
			c.q.Limit = 100
		}
		if got := paths(all(c.q)); got != c.want {
			t.Errorf("search %+v:\n got %q\nwant %q", c.q, got, c.want)
		}
	}
	if _, err := f.d.Search(ctx, b, drive.SearchQuery{Pattern: "x", Under: "/note.txt"}); !errs.Is(err, errs.NotDir) {
		t.Errorf("search under a shared file: %v", err)
	}
	if _, err := f.d.Search(ctx, b, drive.SearchQuery{Pattern: "x", Under: "/from-alice/nope"}); !errs.Is(err, errs.NotFound) || strings.Contains(err.Error(), "/docs") {
		t.Errorf("search under a missing folder in a share: %v", err)
	}
}
