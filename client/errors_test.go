package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/errs"
)

// The client hands callers the server's code as a kind, and its own
// methods for every file operation reach the daemon (the mount uses them).
func TestErrorKindsAndFileOps(t *testing.T) {
	d := startDaemon(t)
	ctx := context.Background()
	admin := New(d.URL, "admin", d.AdminPass)
	if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: "eve", Password: "eve-pass-1", Quota: 600}); err != nil {
		t.Fatal(err)
	}
	c := New(d.URL, "eve", "eve-pass-1")
	kind := func(what string, err error, want errs.Kind, code string) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || e.Kind() != want || e.Code != code || KindOf(err) != want {
			t.Errorf("%s: %v (%#v), want kind %v code %q", what, err, e, want, code)
		}
	}
	// 600 bytes: room for two folders' entries (drive.EntryBytes and the
	// name each), not for a file of 19 bytes beside them.
	_, err := c.Stat(ctx, "/nope")
	kind("stat missing", err, errs.NotFound, "not_found")
	_, err = c.MkdirMode(ctx, "/d", 0o700)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.MkdirMode(ctx, "/d", 0o700)
	kind("mkdir existing", err, errs.Exists, "exists")
	if _, err := c.Mkdir(ctx, "/d/e", false); err != nil {
		t.Fatal(err)
	}
	kind("remove non-empty", c.Remove(ctx, "/d", false), errs.NotEmpty, "not_empty")
	_, err = c.Upload(ctx, "/big", strings.NewReader("more than ten bytes"), 19)
	kind("upload over quota", err, errs.Quota, "quota_exceeded")
	// The server's sentence, said once, with its figures for people.
	if m := err.Error(); !strings.HasPrefix(m, "quota exceeded: ") || strings.Count(m, "quota") != 1 || !strings.Contains(m, " B free, ") {
		t.Errorf("quota message %q", err)
	}
	_, err = c.AdminStats(ctx)
	kind("admin call", err, errs.Permission, "permission_denied")
	_, err = New(d.URL, "eve", "wrong").Quota(ctx)
	kind("wrong password", err, errs.Unauthenticated, "unauthenticated")
	if err.Error() != "wrong user name or password" {
		t.Errorf("unauthenticated message %q", err)
	}

	mtime := time.Date(2001, 2, 3, 4, 5, 6, 7, time.FixedZone("x", 3600))
	mode := uint32(0o750)
	n, err := c.SetAttr(ctx, "/d", &mtime, &mode)
	if err != nil || !n.MTime.Equal(mtime) || n.Mode != 0o750 || !n.IsDir {
		t.Fatalf("setattr: %+v, %v", n, err)
	}
	if n, err := c.Move(ctx, "/d", "/f", false); err != nil || n.Path != "/f" {
		t.Fatalf("move: %+v, %v", n, err)
	}
	ns, err := c.List(ctx, "/f")
	if err != nil || len(ns) != 1 || ns[0].Name != "e" || ns[0].Mode != 0o755 {
		t.Fatalf("list: %+v, %v", ns, err)
	}
	if err := c.Remove(ctx, "/f/e", false); err != nil {
		t.Fatal(err)
	}
}
