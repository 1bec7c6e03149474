package drive_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
)

// A link's token resolves to its owner and node (following the node
// across a move) until it expires on the drive's clock, is revoked, has
// its downloads used up, or its node goes to the trash; every one of
// these answers exactly as a random token does. Upload-only and read-write
// links are for folders; a password is stored hashed and checked; the use
// is recorded at most once a minute.
func TestLinkRules(t *testing.T) {
	clock := testutil.NewClock(time.Unix(1_700_000_000, 0))
	e := drivetest.New(t, drivetest.Options{Clock: clock})
	ctx := context.Background()
	alice := e.AddUser(t, "alice", 0)
	bob := e.AddUser(t, "bob", 0)
	if _, err := e.Drive.Mkdir(ctx, alice.ID, "/d"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Drive.PutFile(ctx, alice.ID, "/d/f.txt", drive.PutOptions{Size: 2}, strings.NewReader("hi")); err != nil {
		t.Fatal(err)
	}
	random := func() error {
		_, err := e.Drive.ResolveLink(ctx, "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
		return err
	}
	same := func(what string, err error) {
		t.Helper()
		want := random()
		if !errs.Is(err, errs.NotFound) || err.Error() != want.Error() {
			t.Fatalf("%s: %v, want what a random token gets: %v", what, err, want)
		}
	}
	same("a random token", random())
	same("not a token", func() error { _, err := e.Drive.ResolveLink(ctx, "../../etc"); return err }())

	_, _, err := e.Drive.CreateLink(ctx, alice.ID, "/d/f.txt", drive.LinkOptions{Perm: meta.LinkUpload})
	if !errs.Is(err, errs.Invalid) {
		t.Fatalf("an upload-only link to a file: %v", err)
	}
	_, _, err = e.Drive.CreateLink(ctx, alice.ID, "/d", drive.LinkOptions{Expires: clock.Now()})
	if !errs.Is(err, errs.Invalid) {
		t.Fatalf("a link expiring now: %v", err)
	}
	_, _, err = e.Drive.CreateLink(ctx, bob.ID, "/d", drive.LinkOptions{})
	if !errs.Is(err, errs.NotFound) {
		t.Fatalf("bob linking a path of his that does not exist: %v", err)
	}

	tok, l, err := e.Drive.CreateLink(ctx, alice.ID, "/d", drive.LinkOptions{Password: "pw", Perm: meta.LinkReadWrite,
		Expires: clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !drive.ValidLinkToken(tok) || !strings.HasPrefix(l.PassHash, "$2") || strings.Contains(l.TokenHash, tok) {
		t.Fatalf("token %q, link %+v", tok, l)
	}
	if tok2, _, _ := e.Drive.CreateLink(ctx, alice.ID, "/d", drive.LinkOptions{}); tok2 == tok {
		t.Fatal("two links got one token")
	}
	pl, err := e.Drive.ResolveLink(ctx, tok)
	if err != nil || pl.Owner.ID != alice.ID || pl.Root.Path != "/d" || pl.Perm != meta.LinkReadWrite {
		t.Fatalf("ResolveLink = %+v, %v", pl, err)
	}
	if drive.LinkPasswordOK(pl.Link, "wrong") || !drive.LinkPasswordOK(pl.Link, "pw") {
		t.Fatal("the link's password check")
	}
	lastUse := func() time.Time {
		t.Helper()
		ls, err := e.Drive.Links(ctx, alice.ID)
		if err != nil || len(ls) != 2 {
			t.Fatalf("links: %+v %v", ls, err)
		}
		return ls[0].Last
	}
	if first := clock.Now(); !lastUse().Equal(first) {
		t.Fatalf("last use %v, want %v", lastUse(), first)
	}

	// It follows the folder.
	if err := e.Drive.Move(ctx, alice.ID, "/d", "/e", false); err != nil {
		t.Fatal(err)
	}
	if pl, err := e.Drive.ResolveLink(ctx, tok); err != nil || pl.Root.Path != "/e" {
		t.Fatalf("after a move: %+v, %v", pl, err)
	}
	// Expiry, on the drive's clock.
	clock.Advance(time.Hour - time.Nanosecond)
	if _, err := e.Drive.ResolveLink(ctx, tok); err != nil {
		t.Fatalf("just before the expiry: %v", err)
	}
	clock.Advance(time.Nanosecond)
	_, err = e.Drive.ResolveLink(ctx, tok)
	same("an expired link", err)

	// Downloads: the bound refuses the one past it, and then the link.
	ftok, fl, err := e.Drive.CreateLink(ctx, alice.ID, "/e/f.txt", drive.LinkOptions{MaxDownloads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Drive.CountLinkDownload(ctx, fl); err != nil {
		t.Fatal(err)
	}
	same("a download past the bound", e.Drive.CountLinkDownload(ctx, fl))
	_, err = e.Drive.ResolveLink(ctx, ftok)
	same("a link with its downloads used up", err)

	// Revocation by the owner only; the trash ends a link.
	rtok, rl, err := e.Drive.CreateLink(ctx, alice.ID, "/e/f.txt", drive.LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Drive.RevokeLink(ctx, bob.ID, rl.ID); !errs.Is(err, errs.NotFound) {
		t.Fatalf("bob revoking alice's link: %v", err)
	}
	if err := e.Drive.RevokeLink(ctx, alice.ID, rl.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.Drive.ResolveLink(ctx, rtok)
	same("a revoked link", err)
	ttok, _, err := e.Drive.CreateLink(ctx, alice.ID, "/e/f.txt", drive.LinkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Drive.Remove(ctx, alice.ID, "/e"); err != nil {
		t.Fatal(err)
	}
	_, err = e.Drive.ResolveLink(ctx, ttok)
	same("a link into a deleted folder", err)
}
