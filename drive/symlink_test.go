package drive_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"netdisk/errs"
	"netdisk/meta"
)

// TestSymlinks: the drive stores links as given and never follows one: a
// path below a link is not a path, reading a link gives its target, and the
// whole-drive passes (GC, fsck, checksums) leave links alone.
func TestSymlinks(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.a.ID
	f.put(t, a, "/f", random(1, 3000))
	if _, err := f.d.Mkdir(ctx, a, "/d"); err != nil {
		t.Fatal(err)
	}
	for p, target := range map[string]string{"/l": "f", "/d/up": "../f", "/esc": "/etc/passwd", "/dotdot": "../../../../etc"} {
		n, err := f.d.Symlink(ctx, a, p, target)
		if err != nil || !n.IsSymlink() || n.Target != target {
			t.Fatalf("Symlink %s: %+v %v", p, n, err)
		}
		if got, err := f.d.Readlink(ctx, a, p); err != nil || got != target {
			t.Fatalf("Readlink %s = %q, %v", p, got, err)
		}
	}
	if _, err := f.d.Readlink(ctx, a, "/f"); !errs.Is(err, errs.Invalid) {
		t.Fatalf("Readlink of a file: %v, want Invalid (EINVAL)", err)
	}
	if _, err := f.d.Readlink(ctx, a, "/nope"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Readlink of nothing: %v", err)
	}
	if _, err := f.d.Symlink(ctx, a, "/l", "x"); !errs.Is(err, errs.Exists) {
		t.Fatalf("Symlink over a link: %v", err)
	}
	if _, err := f.d.Symlink(ctx, a, "/e", ""); !errs.Is(err, errs.Invalid) {
		t.Fatalf("Symlink with no target: %v", err)
	}
	if _, err := f.d.Symlink(ctx, a, "/e", strings.Repeat("x", meta.MaxSymlinkTarget+1)); !errs.Is(err, errs.TooLarge) {
		t.Fatalf("Symlink with a long target: %v", err)
	}
	// Never followed: below a link is nothing, whatever it points at.
	if _, err := f.d.Stat(ctx, a, "/esc/x"); err == nil {
		t.Fatal("a path through a link resolved")
	}
	if _, err := f.d.Open(ctx, a, "/dotdot/etc/passwd"); err == nil {
		t.Fatal("a path through a link opened")
	}
	// Reading a link (WebDAV GET, downloads, zip) gives its target's bytes.
	rd, err := f.d.Open(ctx, a, "/esc")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rd)
	rd.Close()
	if err != nil || string(b) != "/etc/passwd" {
		t.Fatalf("reading a link: %q %v", b, err)
	}
	// Charged its target's length and its entry, in the store and the ledger.
	q, err := f.d.QuotaOf(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(3000 + len("f") + len("../f") + len("/etc/passwd") + len("../../../../etc"))
	if q.Finished != want {
		t.Fatalf("finished %d, want %d", q.Finished, want)
	}
	// Quota: a link needs room like a create.
	if err := f.d.SetQuota(ctx, "bob", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Symlink(ctx, f.b.ID, "/l", "target"); !errs.Is(err, errs.Quota) {
		t.Fatalf("a link past the quota: %v", err)
	}
	// GC, fsck and the checksum pass see no content to handle.
	if _, err := f.d.FillChecksums(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := f.d.Stat(ctx, a, "/l"); n.MD5 != "" || !n.IsSymlink() {
		t.Fatalf("the checksum pass touched a link: %+v", n)
	}
	if _, err := f.d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := f.d.Fsck(ctx, nil); err != nil || len(res.Problems) != 0 {
		t.Fatalf("fsck: %+v %v", res, err)
	}
	if rd, err := f.d.Open(ctx, a, "/f"); err != nil {
		t.Fatal(err)
	} else if b, err := io.ReadAll(rd); err != nil || len(b) != 3000 {
		t.Fatalf("the file after GC: %d bytes, %v", len(b), err)
	} else {
		rd.Close()
	}
	// Delete removes the link, never its target.
	if err := f.d.Remove(ctx, a, "/l"); err != nil {
		t.Fatal(err)
	}
	if n, err := f.d.Stat(ctx, a, "/f"); err != nil || !n.IsFile() {
		t.Fatalf("the target after removing the link: %+v %v", n, err)
	}
}
