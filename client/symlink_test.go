package client

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"netdisk/apitype"
)

// TestPushPullSymlinks: push sends links as links (rsync -l), a re-run
// leaves an unchanged link alone and replaces a changed one, and pull
// recreates them, never following one on either side.
func TestPushPullSymlinks(t *testing.T) {
	d := startDaemon(t)
	c := New(d.URL, "admin", d.AdminPass)
	ctx := context.Background()
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "docs", "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(src, "only-links"), 0o755); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"readme":            "docs/a.txt",
		"docdir":            "docs",
		"dangling":          "no/such/file",
		"only-links/passwd": "/etc/passwd",
		"only-links/updir":  "../docs",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(src, name)); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.Push(ctx, src+"/", "/dst", PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Links != len(links) || res.Files != 1 {
		t.Fatalf("push: %+v, want %d links and 1 file", res, len(links))
	}
	for name, target := range links {
		n, err := c.Stat(ctx, "/dst/"+name)
		if err != nil || n.Type != apitype.TypeSymlink || n.Target != target {
			t.Fatalf("remote %s: %+v %v", name, n, err)
		}
	}
	// A link has no chunks and no bytes for an agent to deliver.
	if _, err := c.Chunks(ctx, "/dst/readme"); StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("chunks of a link: %v, want 400", err)
	}
	if _, err := c.AsyncAdd(ctx, apitype.AsyncAdd{Path: "/dst/readme", Agent: "a", TargetDir: "x", WaitForAgent: true}); StatusOf(err) != http.StatusBadRequest {
		t.Fatalf("async download of a link: %v, want 400", err)
	}
	// A re-run sends nothing; a changed link is replaced, a file where a
	// link was too.
	if res, err := c.Push(ctx, src+"/", "/dst", PushOptions{}); err != nil || res.Links != 0 || res.Files != 0 {
		t.Fatalf("re-run: %+v %v", res, err)
	}
	os.Remove(filepath.Join(src, "dangling"))
	if err := os.Symlink("docs/a.txt", filepath.Join(src, "dangling")); err != nil {
		t.Fatal(err)
	}
	links["dangling"] = "docs/a.txt"
	if res, err := c.Push(ctx, src+"/", "/dst", PushOptions{}); err != nil || res.Links != 1 {
		t.Fatalf("re-run after a change: %+v %v", res, err)
	}
	if n, _ := c.Stat(ctx, "/dst/dangling"); n.Target != "docs/a.txt" {
		t.Fatalf("changed link: %+v", n)
	}

	// Pull recreates every link with its target.
	dst := t.TempDir()
	pres, err := c.Pull(ctx, "/dst/", dst, PullOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pres.Links != len(links) {
		t.Fatalf("pull: %+v, want %d links", pres, len(links))
	}
	for name, target := range links {
		got, err := os.Readlink(filepath.Join(dst, name))
		if err != nil || got != target {
			t.Fatalf("local %s: %q %v, want %q", name, got, err, target)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "docs", "a.txt")); err != nil || string(b) != "alpha" {
		t.Fatalf("pulled file: %q %v", b, err)
	}
	// A re-run leaves the links alone; a changed one is replaced.
	if pres, err := c.Pull(ctx, "/dst/", dst, PullOptions{}); err != nil || pres.Links != 0 {
		t.Fatalf("pull re-run: %+v %v", pres, err)
	}
	os.Remove(filepath.Join(dst, "readme"))
	if err := os.Symlink("elsewhere", filepath.Join(dst, "readme")); err != nil {
		t.Fatal(err)
	}
	if pres, err := c.Pull(ctx, "/dst/", dst, PullOptions{}); err != nil || pres.Links != 1 {
		t.Fatalf("pull after a local change: %+v %v", pres, err)
	}
	if got, _ := os.Readlink(filepath.Join(dst, "readme")); got != "docs/a.txt" {
		t.Fatalf("re-pulled link: %q", got)
	}
}
