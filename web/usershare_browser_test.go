package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// The page shares with a user (the Share dialog: a name and "Allow
// changes") and marks what others share with the signed-in user with its
// owner ("Shared by alice").
func TestBrowserShareWithUser(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	admin := client.New(d.URL, "admin", d.AdminPass)
	for _, u := range []string{"alice", "bob"} {
		if _, err := admin.AdminAddUser(ctx, apitype.NewUser{Name: u, Password: u + "-pass"}); err != nil {
			t.Fatal(err)
		}
	}
	alice := client.New(d.URL, "alice", "alice-pass")
	bob := client.New(d.URL, "bob", "bob-pass")
	for _, p := range []string{"/proj", "/docs"} {
		if _, err := alice.Mkdir(ctx, p, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.ShareWith(ctx, apitype.NewUserShare{Path: "/docs", User: "bob"}); err != nil {
		t.Fatal(err)
	}

	b.SignIn(t, d.URL, "alice", "alice-pass")
	b.Run(t, "share /proj with bob, writable", 30*time.Second,
		chromedp.WaitVisible(`tr[data-path="/proj"]`, chromedp.ByQuery),
		chromedp.Click(`tr[data-path="/proj"] td.c-size`, chromedp.ByQuery),
		chromedp.WaitVisible(`#act-share-user`, chromedp.ByQuery),
		chromedp.Click(`#act-share-user`, chromedp.ByQuery),
		chromedp.WaitVisible(`#dlg-input`, chromedp.ByQuery),
		chromedp.SendKeys(`#dlg-input`, "bob", chromedp.ByQuery),
		chromedp.Click(`#share-write`, chromedp.ByQuery),
		chromedp.Click(`#dlg-ok`, chromedp.ByQuery),
		chromedp.WaitNotVisible(`#dlg`, chromedp.ByQuery),
	)
	l, err := bob.UserShares(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, m := range l.SharedWithMe {
		got[m.Path] = m.Write
	}
	if w, ok := got["/proj"]; !ok || !w || len(got) != 2 {
		t.Fatalf("bob's shares after the dialog: %+v", l.SharedWithMe)
	}

	b.Run(t, "sign out", 20*time.Second,
		chromedp.Click(`#signout`, chromedp.ByQuery),
		chromedp.WaitVisible(`#signin-name`, chromedp.ByQuery),
	)
	var docs, proj string
	var shareHidden bool
	b.Run(t, "bob sees the marks", 30*time.Second, append(browsertest.SignInActions(d.URL, "bob", "bob-pass"),
		chromedp.WaitVisible(`tr[data-path="/docs"] .shared-badge`, chromedp.ByQuery),
		chromedp.Text(`tr[data-path="/docs"] .shared-badge`, &docs, chromedp.ByQuery),
		chromedp.Text(`tr[data-path="/proj"] .shared-badge`, &proj, chromedp.ByQuery),
		chromedp.Click(`tr[data-path="/docs"] td.c-size`, chromedp.ByQuery),
		chromedp.WaitVisible(`#selbar`, chromedp.ByQuery),
		chromedp.Evaluate(`document.getElementById('act-share-user').hidden`, &shareHidden),
	)...)
	if !strings.Contains(docs, "Shared by alice") || !strings.Contains(docs, "read-only") || !strings.Contains(proj, "Shared by alice") || strings.Contains(proj, "read-only") {
		t.Fatalf("marks: /docs %q, /proj %q", docs, proj)
	}
	if !shareHidden {
		t.Fatal("the Share action is offered on someone else's share")
	}
}
