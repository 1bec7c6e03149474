package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/testutil"
	"netdisk/web"
)

// webSignIn signs name in to the web page of d and returns the session
// cookie's value.
func webSignIn(t *testing.T, d *testutil.Daemon, name, pass string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"name": name, "password": pass})
	resp, err := d.Do(context.Background(), "POST", "/web/login", "", "", body, map[string]string{"Content-Type": "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == web.CookieName && resp.StatusCode == 200 {
			return c.Value
		}
	}
	t.Fatalf("web sign-in of %s: %d", name, resp.StatusCode)
	return ""
}

func webSessionLive(t *testing.T, d *testutil.Daemon, cookie string) bool {
	t.Helper()
	resp, err := d.Do(context.Background(), "GET", "/web/session", "", "", nil, map[string]string{"Cookie": web.CookieName + "=" + cookie, web.PageHeader: "1"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

// TestPasswdChangesOwnPassword: `netdisk passwd` run by the user changes
// their own password, from the environment or asked on a terminal (the
// current once, the new twice), refuses without a new password before
// sending anything, and ends the user's web sessions; the old password is
// refused from then on.
func TestPasswdChangesOwnPassword(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pass-1")
	alice := func(pass string) map[string]string {
		return map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": pass}
	}
	failCLI(t, d, alice("alice-pass-1"), 1, "no new password given: use --new-password, set NETDISK_NEW_PASSWORD, or run on a terminal to be asked", "passwd")
	failCLI(t, d, alice("wrong-pass"), 1, "wrong user name or password", "passwd", "--new-password", "x-pass")

	cookie := webSignIn(t, d, "alice", "alice-pass-1")
	env := alice("alice-pass-1")
	env["NETDISK_NEW_PASSWORD"] = "alice-pass-2"
	if r := runCLI(t, d, env, "passwd"); r.code != 0 || !strings.Contains(r.stdout, "password of alice changed") {
		t.Fatalf("passwd: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if webSessionLive(t, d, cookie) {
		t.Error("the web session survived the password change")
	}
	if st := davStatus(t, d, "PROPFIND", "/", "alice", "alice-pass-1", nil); st != http.StatusUnauthorized {
		t.Errorf("the old password after passwd: %d, want 401", st)
	}
	if st := davStatus(t, d, "PROPFIND", "/", "alice", "alice-pass-2", nil); st != http.StatusMultiStatus {
		t.Errorf("the new password after passwd: %d, want 207", st)
	}

	// On a terminal: the current password, then the new one twice.
	vars := map[string]string{"NETDISK_SERVER": d.URL, "NETDISK_USER": "alice"}
	out, code := onTerminal(t, vars, "passwd", [2]string{"Password for alice at ", "alice-pass-2"},
		[2]string{"New password for alice:", "alice-pass-3"}, [2]string{"Repeat it:", "alice-pass-3"})
	if code != 0 || !strings.Contains(out, "password of alice changed") || strings.Contains(out, "alice-pass-3") {
		t.Fatalf("passwd on a terminal: exit %d, output %q", code, out)
	}
	out, code = onTerminal(t, vars, "passwd", [2]string{"Password for alice at ", "alice-pass-3"},
		[2]string{"New password for alice:", "one-thing"}, [2]string{"Repeat it:", "another"})
	if code != 1 || !strings.Contains(out, "do not match") {
		t.Fatalf("mismatched new passwords: exit %d, output %q", code, out)
	}
	if st := davStatus(t, d, "PROPFIND", "/", "alice", "alice-pass-3", nil); st != http.StatusMultiStatus {
		t.Errorf("the password typed on the terminal: %d, want 207", st)
	}
}

// TestAppTokens: `netdisk token add` prints a token that signs the user in
// wherever the password does (curl over WebDAV, the CLI); `token ls` shows
// it with its last use; it cannot change the password, make or revoke
// tokens, nor set another user's password as an admin (403); `token rm`
// revokes it at once; and a revoked token counts as a failed login, so
// guessing tokens is throttled like guessing passwords.
func TestAppTokens(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pass")
	alice := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pass"}
	r := runCLI(t, d, alice, "token", "add", "laptop")
	token := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(token, "ndt_") || strings.Contains(token, "\n") || !strings.Contains(r.stderr, "not shown again") {
		t.Fatalf("token add: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	failCLI(t, d, alice, 1, `you already have a token named "laptop"`, "token", "add", "laptop")
	if r := runCLI(t, d, alice, "token", "ls"); r.code != 0 || !strings.Contains(r.stdout, "laptop") || !strings.Contains(r.stdout, "never") {
		t.Fatalf("token ls before any use: exit %d, stdout %q", r.code, r.stdout)
	}

	// curl over WebDAV with the token as the Basic password.
	curl := testutil.RequireTool(t, "curl")
	out, err := exec.Command(curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-u", "alice:"+token, "-T", "-",
		d.URL+"/dav/from-curl.txt").CombinedOutput()
	if err != nil || string(out) != "201" {
		t.Fatalf("curl PUT with the token: %v, %s", err, out)
	}
	withToken := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": token}
	if r := runCLI(t, d, withToken, "ls", "/"); r.code != 0 || !strings.Contains(r.stdout, "from-curl.txt") {
		t.Fatalf("ls with the token: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	var ts []apitype.Token
	if err := json.Unmarshal([]byte(runCLI(t, d, withToken, "token", "ls", "--json").stdout), &ts); err != nil || len(ts) != 1 || ts[0].LastUse == nil {
		t.Fatalf("token ls --json after use: %+v %v", ts, err)
	}

	// What needs the password.
	failCLI(t, d, map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": token, "NETDISK_NEW_PASSWORD": "taken-over"}, 1,
		"an app token cannot change the password", "passwd")
	failCLI(t, d, withToken, 1, "an app token cannot make tokens", "token", "add", "another")
	failCLI(t, d, withToken, 1, "an app token cannot revoke tokens", "token", "rm", "laptop")
	resp, err := d.Do(context.Background(), "PUT", "/api/v1/account/password", "alice", token, []byte(`{"old":"alice-pass","new":"x"}`),
		map[string]string{"Content-Type": "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("password change with a token (and the right old password): %d, want 403", resp.StatusCode)
	}
	adminToken := strings.TrimSpace(mustCLI(t, d, "token", "add", "admin-script"))
	failCLI(t, d, map[string]string{"NETDISK_PASSWORD": adminToken}, 1, "an app token cannot set passwords",
		"admin", "user", "passwd", "alice", "--password", "taken-over")
	if r := runCLI(t, d, map[string]string{"NETDISK_PASSWORD": adminToken}, "admin", "user", "list"); r.code != 0 {
		t.Fatalf("admin user list with an admin's token: exit %d, stderr %q", r.code, r.stderr)
	}
	// Another user's name with alice's token is no sign-in.
	if st := davStatus(t, d, "PROPFIND", "/", "admin", token, nil); st != http.StatusUnauthorized {
		t.Fatalf("alice's token as admin: %d, want 401", st)
	}

	// A new password leaves the token working; rm ends it at once.
	mustCLI(t, d, "admin", "user", "passwd", "alice", "--password", "alice-pass-2")
	if st := davStatus(t, d, "PROPFIND", "/", "alice", token, nil); st != http.StatusMultiStatus {
		t.Fatalf("the token after a new password: %d, want 207", st)
	}
	alice["NETDISK_PASSWORD"] = "alice-pass-2"
	if r := runCLI(t, d, alice, "token", "rm", "laptop"); r.code != 0 || !strings.Contains(r.stdout, `token "laptop" revoked`) {
		t.Fatalf("token rm: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	failCLI(t, d, alice, 1, `no token named "laptop"`, "token", "rm", "laptop")
	// The revoked token: refused, and counted as a failed login each time,
	// until the pair is locked out and even the password gets 429.
	for i := range 5 {
		if st := davStatus(t, d, "PROPFIND", "/", "alice", token, nil); st != http.StatusUnauthorized {
			t.Fatalf("revoked token, try %d: %d, want 401", i+1, st)
		}
	}
	if st := davStatus(t, d, "PROPFIND", "/", "alice", "alice-pass-2", nil); st != http.StatusTooManyRequests {
		t.Fatalf("the password after 5 revoked-token attempts: %d, want 429", st)
	}
}

// TestMountWithAppToken: a real FUSE mount signed in with an app token from
// --password-file (never the account's password) reads and writes the
// drive.
func TestMountWithAppToken(t *testing.T) {
	fusermount := testutil.RequireTool(t, "fusermount3")
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pass")
	alice := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pass"}
	token := strings.TrimSpace(runCLI(t, d, alice, "token", "add", "mount").stdout)
	put(t, d, "/hello.txt", "alice", "alice-pass", []byte("hello"))
	pf := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(pf, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mnt := t.TempDir()
	cmd := exec.Command(testutil.Binary(t), "mount", "--server", d.URL, "--user", "alice", "--password-file", pf,
		"--cache-dir", t.TempDir(), mnt)
	cmd.Env = cliEnv(nil)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		exec.Command(fusermount, "-u", "-z", mnt).Run()
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(mnt, "hello.txt")); err == nil && string(b) == "hello" {
			break
		}
		select {
		case <-exited:
			t.Fatalf("netdisk mount with a token exited: %s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("hello.txt not readable through the mount after 30s: %s", out.String())
		}
	}
	if err := os.WriteFile(filepath.Join(mnt, "from-mount.txt"), []byte("written"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := d.Do(context.Background(), "GET", "/dav/from-mount.txt", "alice", "alice-pass", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "written" {
		t.Fatalf("a file written through the token's mount: %d %q", resp.StatusCode, b)
	}
}

// TestTokenNames: a token's name is the user's free text (spaces, a slash,
// non-ASCII), listed and revoked as given; an empty or unprintable one is
// refused.
func TestTokenNames(t *testing.T) {
	d := testutil.StartDaemon(t)
	for _, name := range []string{"backup agent", "host/mount", "ноутбук"} {
		r := runCLI(t, d, nil, "token", "add", name)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "ndt_") {
			t.Fatalf("token add %q: exit %d, stdout %q, stderr %q", name, r.code, r.stdout, r.stderr)
		}
		if out := mustCLI(t, d, "token", "ls"); !strings.Contains(out, name) {
			t.Fatalf("token ls after adding %q: %q", name, out)
		}
		if out := mustCLI(t, d, "token", "rm", name); !strings.Contains(out, "revoked") {
			t.Fatalf("token rm %q: %q", name, out)
		}
	}
	failCLI(t, d, nil, 1, "token name must be 1 to 64 characters", "token", "add", "")
	failCLI(t, d, nil, 1, "only printable characters", "token", "add", "tab\there")
	if out := mustCLI(t, d, "token", "ls"); strings.Count(out, "\n") != 1 {
		t.Fatalf("tokens left after the refusals: %q", out)
	}
}
