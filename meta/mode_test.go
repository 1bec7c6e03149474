package meta

import (
	"context"
	"testing"
	"time"

	"netdisk/errs"
)

// TestModes: SetMode and MkdirMode store bits per user, 000 is not the
// default, bits outside 0o7777 are refused, a new version keeps the mode,
// and copies carry it.
func TestModes(t *testing.T) {
	ctx := context.Background()
	s, alice, bob := openAliceAndBob(t)
	now := time.Unix(1700000000, 0)
	perm := func(uid int64, p string) uint32 {
		t.Helper()
		n, err := s.Stat(ctx, uid, p)
		if err != nil {
			t.Fatal(err)
		}
		return n.Perm()
	}
	for _, u := range []User{alice, bob} {
		if _, err := s.CommitFile(ctx, u.ID, "/f", NewFile{Size: 1, FileHash: "x", ModTime: now}); err != nil {
			t.Fatal(err)
		}
	}
	if got := perm(alice.ID, "/f"); got != DefaultFileMode {
		t.Fatalf("new file: %o", got)
	}
	if err := s.SetMode(ctx, alice.ID, "/f", 0o4750); err != nil {
		t.Fatal(err)
	}
	if got, other := perm(alice.ID, "/f"), perm(bob.ID, "/f"); got != 0o4750 || other != DefaultFileMode {
		t.Fatalf("after SetMode: alice %o, bob %o", got, other)
	}
	if err := s.SetMode(ctx, alice.ID, "/f", 0o10000); !errs.Is(err, errs.Invalid) {
		t.Fatalf("bits outside 0o7777: %v", err)
	}
	if err := s.SetMode(ctx, alice.ID, "/nope", 0o600); !errs.Is(err, errs.NotFound) {
		t.Fatalf("missing path: %v", err)
	}
	// A new version without a mode keeps it; one with a mode replaces it.
	if _, err := s.CommitFile(ctx, alice.ID, "/f", NewFile{Size: 2, FileHash: "y", ModTime: now}); err != nil {
		t.Fatal(err)
	}
	if got := perm(alice.ID, "/f"); got != 0o4750 {
		t.Fatalf("after a new version: %o", got)
	}
	if err := s.SetMode(ctx, alice.ID, "/f", 0); err != nil {
		t.Fatal(err)
	}
	if got := perm(alice.ID, "/f"); got != 0 {
		t.Fatalf("chmod 000 reads %o", got)
	}
	if _, err := s.CommitFile(ctx, alice.ID, "/f", NewFile{Size: 3, FileHash: "z", ModTime: now}); err != nil {
		t.Fatal(err)
	}
	if got := perm(alice.ID, "/f"); got != 0 {
		t.Fatalf("000 after a new version reads %o", got)
	}

	d, err := s.MkdirMode(ctx, alice.ID, "/d", now, 0o700)
	if err != nil || d.Perm() != 0o700 || perm(alice.ID, "/d") != 0o700 {
		t.Fatalf("MkdirMode: %+v %v", d, err)
	}
	if _, err := s.MkdirMode(ctx, alice.ID, "/d", now, 0o700); !errs.Is(err, errs.Exists) {
		t.Fatalf("MkdirMode over a directory: %v", err)
	}
	if _, err := s.MkdirMode(ctx, alice.ID, "/x/y", now, 0o700); !errs.Is(err, errs.NoParent) {
		t.Fatalf("MkdirMode without parent: %v", err)
	}
	if _, err := s.MkdirMode(ctx, alice.ID, "/e", now, 0o20000); !errs.Is(err, errs.Invalid) {
		t.Fatalf("MkdirMode with bits outside 0o7777: %v", err)
	}
	if _, err := s.Mkdir(ctx, alice.ID, "/plain", now); err != nil || perm(alice.ID, "/plain") != DefaultDirMode {
		t.Fatalf("Mkdir: %v", err)
	}
	if err := s.Copy(ctx, alice.ID, "/d", "/d2", false, true); err != nil || perm(alice.ID, "/d2") != 0o700 {
		t.Fatalf("copy: %o %v", perm(alice.ID, "/d2"), err)
	}
}
