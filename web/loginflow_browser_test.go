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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"netdisk/testutil"
	"netdisk/web/browsertest"
)

// TestBrowserLoginFlowV2 runs Nextcloud's Login Flow v2 as a client and a
// user do: the client starts it (its User-Agent a markup attack), the user
// opens the login URL in Chromium, signs in there, sees the device named as
// text and grants access; the client's poll, 404 until then, returns the
// server, the login name and an app password once. That password signs
// WebDAV in, is listed by `netdisk token ls` under the device's name, and
// once revoked by `netdisk token rm` is refused at the next request. On
// the way: polls with the login token, a made-up token or an empty one are
// the same 404 as a pending flow's, and a grant without the session's CSRF
// token is refused and grants nothing.
func TestBrowserLoginFlowV2(t *testing.T) {
	b := browsertest.Start(t, browsertest.Chromium(t))
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	resp, err := d.Do(ctx, "POST", "/api/v1/admin/users", "admin", d.AdminPass, []byte(`{"name":"alice","password":"alice-pass-1"}`), nil)
	if err != nil || resp.StatusCode != 201 {
		t.Fatalf("add alice: %v %v", err, resp)
	}
	resp.Body.Close()

	const device = `<img src=x onerror="window.__xss=1">Nextcloud <b>desktop</b>`
	post := func(path string, form url.Values) (int, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, "POST", d.URL+path, strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", device)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	code, body := post("/index.php/login/v2", nil)
	var start struct {
		Poll  struct{ Token, Endpoint string }
		Login string
	}
	if code != 200 || json.Unmarshal(body, &start) != nil {
		t.Fatalf("start: %d %s", code, body)
	}
	if start.Poll.Endpoint != d.URL+"/index.php/login/v2/poll" || !strings.HasPrefix(start.Login, d.URL+"/index.php/login/v2/flow/") {
		t.Fatalf("start: %s", body)
	}
	// The same flow start without the index.php prefix.
	if code, body := post("/login/v2", nil); code != 200 || !strings.Contains(string(body), `"endpoint":"`+d.URL+`/index.php/login/v2/poll"`) {
		t.Fatalf("start at /login/v2: %d %s", code, body)
	}
	loginToken := strings.TrimPrefix(start.Login, d.URL+"/index.php/login/v2/flow/")
	poll := func(token string) (int, []byte) {
		t.Helper()
		return post(strings.TrimPrefix(start.Poll.Endpoint, d.URL), url.Values{"token": {token}})
	}
	pendingCode, pendingBody := poll(start.Poll.Token)
	if pendingCode != 404 {
		t.Fatalf("poll before the grant: %d %s", pendingCode, pendingBody)
	}
	for _, tok := range []string{loginToken, "made-up", "", start.Poll.Token + "x"} {
		if code, body := poll(tok); code != 404 || !bytes.Equal(body, pendingBody) {
			t.Fatalf("poll with %q: %d %s; want the pending flow's 404 %s", tok, code, body, pendingBody)
		}
	}

	var shown, user, prefilled string
	var xss, imgs int
	b.Run(t, "open the login URL and sign in", 30*time.Second,
		// As the desktop client opens it: with the user it expects.
		chromedp.Navigate(start.Login+"?user=alice"),
		chromedp.WaitVisible("#signin-name", chromedp.ByQuery),
		chromedp.Value("#signin-name", &prefilled, chromedp.ByQuery),
		chromedp.SendKeys("#signin-pass", "alice-pass-1", chromedp.ByQuery),
		chromedp.Click("#signin-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#grant-submit", chromedp.ByQuery),
		chromedp.Text("#grant-device", &shown, chromedp.ByQuery),
		chromedp.Text("#grant-user", &user, chromedp.ByQuery),
		chromedp.Evaluate(`window.__xss === undefined ? 0 : 1`, &xss),
		chromedp.Evaluate(`document.querySelectorAll('#grant-device *').length`, &imgs),
	)
	if prefilled != "alice" {
		t.Fatalf("sign-in form's name from ?user=: %q", prefilled)
	}
	if shown != device || user != "alice" || xss != 0 || imgs != 0 {
		t.Fatalf("grant screen shows %q for %q (script ran: %d, elements from the name: %d); want the name as text", shown, user, xss, imgs)
	}

	// The signed-in page's own fetch, without the CSRF token: refused.
	var noCSRF int
	b.Run(t, "grant without the CSRF token", 20*time.Second, chromedp.Evaluate(
		`fetch('/web/loginflow/`+loginToken+`/grant', {method: 'POST', credentials: 'same-origin'}).then(r => r.status)`, &noCSRF,
		func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if noCSRF != 403 {
		t.Fatalf("grant without the CSRF token: %d, want 403", noCSRF)
	}
	if code, _ := poll(start.Poll.Token); code != 404 {
		t.Fatalf("poll after the refused grant: %d, want 404", code)
	}

	b.Run(t, "grant", 20*time.Second,
		chromedp.Click("#grant-submit", chromedp.ByQuery),
		chromedp.WaitVisible("#grant-done", chromedp.ByQuery))
	// Collected as a JSON body (Nextcloud takes both; the flow is the
	// same): the form poll after it finds nothing.
	jsonPoll, err := d.Do(ctx, "POST", "/index.php/login/v2/poll", "", "", []byte(`{"token":"`+start.Poll.Token+`"}`), map[string]string{"Content-Type": "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(jsonPoll.Body)
	jsonPoll.Body.Close()
	code = jsonPoll.StatusCode
	var got struct{ Server, LoginName, AppPassword string }
	if code != 200 || json.Unmarshal(body, &got) != nil || got.Server != d.URL || got.LoginName != "alice" || got.AppPassword == "" {
		t.Fatalf("poll after the grant: %d %s", code, body)
	}
	if code, _ := poll(start.Poll.Token); code != 404 {
		t.Fatalf("second poll: %d, want 404 (the flow is consumed)", code)
	}

	propfind := func() int {
		t.Helper()
		resp, err := d.Do(ctx, "PROPFIND", "/dav/", got.LoginName, got.AppPassword, nil, map[string]string{"Depth": "0"})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if st := propfind(); st != 207 {
		t.Fatalf("PROPFIND with the app password: %d, want 207", st)
	}

	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, testutil.Binary(t), args...)
		cmd.Env = append(os.Environ(), "NETDISK_SERVER="+d.URL, "NETDISK_USER=alice", "NETDISK_PASSWORD=alice-pass-1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("netdisk %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	var listed []struct {
		Name    string
		LastUse *time.Time
	}
	if err := json.Unmarshal([]byte(cli("token", "ls", "--json")), &listed); err != nil || len(listed) != 1 || listed[0].LastUse == nil ||
		!strings.HasPrefix(listed[0].Name, `<img src=x onerror="window.__xss=1">`) {
		t.Fatalf("token ls: %+v %v; want one token named after the device, used", listed, err)
	}
	cli("token", "rm", listed[0].Name)
	if st := propfind(); st != 401 {
		t.Fatalf("PROPFIND with the revoked app password: %d, want 401", st)
	}
}

// TestLoginFlowPollThrottleOnTheWire: the daemon answers an address that
// keeps polling unknown tokens 404, then 429 with Retry-After, its pending
// flow's polls included (else a hit among the guesses would stand out as a
// 404 among 429s).
func TestLoginFlowPollThrottleOnTheWire(t *testing.T) {
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	post := func(path, form string) *http.Response {
		t.Helper()
		resp, err := d.Do(ctx, "POST", path, "", "", []byte(form), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp, err := d.Do(ctx, "POST", "/index.php/login/v2", "", "", nil, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("start: %v %v", err, resp)
	}
	var start struct{ Poll struct{ Token string } }
	if err := json.NewDecoder(resp.Body).Decode(&start); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for i := range 20 {
		if st := post("/index.php/login/v2/poll", "token=guess"+strconv.Itoa(i)).StatusCode; st != 404 {
			t.Fatalf("guess %d: %d, want 404", i, st)
		}
	}
	for _, form := range []string{"token=guess-more", "token=" + start.Poll.Token} {
		if r := post("/login/v2/poll", form); r.StatusCode != 429 || r.Header.Get("Retry-After") == "" {
			t.Fatalf("poll %s after 20 guesses: %d, Retry-After %q; want 429 with it", form, r.StatusCode, r.Header.Get("Retry-After"))
		}
	}
}
