package web_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// TestBrowserChangePassword: the page's Password dialog changes the user's
// own password. A wrong current password is said in the dialog and changes
// nothing; the right one changes it, and the page (whose session the change
// ended, as every other) is back at its sign-in form saying why.
func TestBrowserChangePassword(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	resp, err := d.Do(ctx, "POST", "/api/v1/admin/users", "admin", d.AdminPass, []byte(`{"name":"alice","password":"alice-pass-1"}`),
		map[string]string{"Content-Type": "application/json"})
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("add alice: %v %v", err, resp)
	}
	resp.Body.Close()
	b.SignIn(t, d.URL, "alice", "alice-pass-1")
	fill := func(old, nw, again string) chromedp.Action {
		return chromedp.Tasks{
			chromedp.Click("#passwd", chromedp.ByQuery),
			chromedp.WaitVisible("#pw-old", chromedp.ByQuery),
			chromedp.SetValue("#pw-old", old, chromedp.ByQuery),
			chromedp.SetValue("#pw-new", nw, chromedp.ByQuery),
			chromedp.SetValue("#pw-again", again, chromedp.ByQuery),
			chromedp.Click("#dlg-ok", chromedp.ByQuery),
		}
	}
	shots := shooter{t: t, b: b, dir: os.Getenv("NETDISK_SCREENSHOTS")}
	b.Run(t, "open the dialog", 20*time.Second,
		chromedp.Click("#passwd", chromedp.ByQuery),
		chromedp.WaitVisible("#pw-old", chromedp.ByQuery),
		chromedp.SetValue("#pw-old", "alice-pass-1", chromedp.ByQuery),
		chromedp.SetValue("#pw-new", "alice-pass-2", chromedp.ByQuery),
		chromedp.SetValue("#pw-again", "alice-pass-2", chromedp.ByQuery))
	shots.both("password")
	b.Run(t, "close the dialog", 20*time.Second, chromedp.Click("#dlg-cancel", chromedp.ByQuery), chromedp.WaitNotVisible("#pw-old", chromedp.ByQuery))
	var msg string
	b.Run(t, "wrong current password", 20*time.Second, fill("nope", "alice-pass-2", "alice-pass-2"),
		chromedp.Poll(`document.getElementById('dlg-error').textContent`, &msg, chromedp.WithPollingTimeout(10*time.Second)))
	if !strings.Contains(msg, "current password is wrong") {
		t.Fatalf("dialog error %q", msg)
	}
	dav := func(pass string) int {
		t.Helper()
		resp, err := d.Do(ctx, "PROPFIND", "/dav/", "alice", pass, nil, map[string]string{"Depth": "0"})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := dav("alice-pass-1"); st != 207 {
		t.Fatalf("the password after the refused change: %d", st)
	}
	b.Run(t, "the right one", 20*time.Second,
		chromedp.Click("#dlg-cancel", chromedp.ByQuery),
		fill("alice-pass-1", "alice-pass-2", "alice-pass-2"),
		chromedp.WaitVisible("#signin-form", chromedp.ByQuery),
		chromedp.Text("#signin-error", &msg, chromedp.ByQuery))
	if !strings.Contains(msg, "password is changed") {
		t.Fatalf("sign-in message %q", msg)
	}
	if st := dav("alice-pass-1"); st != 401 {
		t.Fatalf("the old password after the change: %d, want 401", st)
	}
	if st := dav("alice-pass-2"); st != 207 {
		t.Fatalf("the new password: %d, want 207", st)
	}
}
