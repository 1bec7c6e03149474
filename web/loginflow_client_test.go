package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// TestNextcloudcmdLoginFlowV2 signs the real Nextcloud client in the way its
// desktop app does, over HTTP end to end: the flow started with the
// client's User-Agent, the user signing in and granting access in Chromium
// on our page, the poll returning the server, the login and an app
// password; nextcloudcmd then syncs both ways with what the poll returned,
// and once the user revokes that app password (`netdisk token rm`) the next
// nextcloudcmd run stops with the server's authentication error and
// changes nothing.
func TestNextcloudcmdLoginFlowV2(t *testing.T) {
	bin := testutil.RequireTool(t, "nextcloudcmd")
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	do := func(method, path, user, pass string, body []byte, hdr map[string]string) (int, []byte) {
		t.Helper()
		resp, err := d.Do(ctx, method, path, user, pass, body, hdr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if st, body := do("POST", "/api/v1/admin/users", "admin", d.AdminPass, []byte(`{"name":"alice","password":"alice-pass-1"}`), nil); st != http.StatusCreated {
		t.Fatalf("add alice: %d %s", st, body)
	}

	// Nextcloud desktop 3.7's User-Agent names the device.
	const agent = "Mozilla/5.0 (Linux) mirall/3.7.3git (Nextcloud, debian-6.1.0 ClientArchitecture: x86_64 OsArchitecture: x86_64)"
	st, body := do("POST", "/index.php/login/v2", "", "", nil, map[string]string{"User-Agent": agent})
	var start struct {
		Poll  struct{ Token, Endpoint string }
		Login string
	}
	if st != http.StatusOK || json.Unmarshal(body, &start) != nil || start.Login == "" || start.Poll.Endpoint == "" {
		t.Fatalf("start: %d %s", st, body)
	}
	b.Run(t, "sign in and grant access", 40*time.Second,
		chromedp.Navigate(start.Login),
		chromedp.WaitVisible("#signin-name", chromedp.ByQuery),
		chromedp.SendKeys("#signin-name", "alice", chromedp.ByQuery),
		chromedp.SendKeys("#signin-pass", "alice-pass-1", chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#grant-submit", chromedp.ByQuery),
		chromedp.Click("#grant-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#grant-done", chromedp.ByQuery))
	poll, err := url.Parse(start.Poll.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	st, body = do("POST", poll.Path, "", "", []byte(url.Values{"token": {start.Poll.Token}}.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "User-Agent": agent})
	var got struct{ Server, LoginName, AppPassword string }
	if st != http.StatusOK || json.Unmarshal(body, &got) != nil || got.AppPassword == "" {
		t.Fatalf("poll after the grant: %d %s", st, body)
	}

	// nextcloudcmd with exactly what the poll returned: a file made on
	// the server comes down, one made in the folder goes up.
	dir := filepath.Join(t.TempDir(), "Nextcloud")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "from the desktop.txt"), []byte("up"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, body := do("PUT", "/dav/on%20the%20server.txt", "alice", "alice-pass-1", []byte("down"), nil); st != http.StatusCreated {
		t.Fatalf("PUT: %d %s", st, body)
	}
	if out, err := testutil.SyncClient(ctx, bin, dir, got.Server, got.LoginName, got.AppPassword); err != nil {
		t.Fatalf("nextcloudcmd with the app password of the flow: %v\n%s", err, tail(out))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "on the server.txt")); err != nil || string(b) != "down" {
		t.Fatalf("the server's file in the folder: %q %v", b, err)
	}
	if st, b := do("GET", "/dav/from%20the%20desktop.txt", "alice", "alice-pass-1", nil, nil); st != http.StatusOK || string(b) != "up" {
		t.Fatalf("the folder's file on the server: %d %q", st, b)
	}

	// Revoked, the app password ends: the next run is refused as
	// unauthenticated and uploads nothing.
	cli := exec.CommandContext(ctx, testutil.Binary(t), "token", "ls", "--json")
	cli.Env = append(os.Environ(), "NETDISK_SERVER="+d.URL, "NETDISK_USER=alice", "NETDISK_PASSWORD=alice-pass-1")
	out, err := cli.Output()
	var tokens []struct{ Name string }
	if err != nil || json.Unmarshal(out, &tokens) != nil || len(tokens) != 1 || !strings.Contains(tokens[0].Name, "mirall") {
		t.Fatalf("token ls: %v %s", err, out)
	}
	cli = exec.CommandContext(ctx, testutil.Binary(t), "token", "rm", tokens[0].Name)
	cli.Env = append(os.Environ(), "NETDISK_SERVER="+d.URL, "NETDISK_USER=alice", "NETDISK_PASSWORD=alice-pass-1")
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("token rm %q: %v\n%s", tokens[0].Name, err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "after the revocation.txt"), []byte("late"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = testutil.SyncClient(ctx, bin, dir, got.Server, got.LoginName, got.AppPassword)
	if err == nil || !bytes.Contains(out, []byte("Host requires authentication")) {
		t.Fatalf("nextcloudcmd with the revoked app password: %v, want an authentication error\n%s", err, tail(out))
	}
	if st, _ := do("GET", "/dav/after%20the%20revocation.txt", "alice", "alice-pass-1", nil, nil); st != http.StatusNotFound {
		t.Fatalf("a file synced with the revoked app password: %d", st)
	}
}

// tail is the end of a client's output, where it says why it stopped.
func tail(b []byte) []byte { return b[max(0, len(b)-3000):] }
