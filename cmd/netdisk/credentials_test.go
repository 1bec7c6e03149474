package main

import (
	"bufio"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"netdisk/client"
	"netdisk/testutil"
)

// requestCounter reads how many HTTP requests d has answered, from the
// netdisk_http_requests_total series of its --metrics-listen listener
// (whose own requests are not counted).
func requestCounter(t *testing.T, d *testutil.Daemon) func() float64 {
	t.Helper()
	m := regexp.MustCompile(`metrics listening \(--metrics-listen\)" addr=(\S+)`).FindStringSubmatch(d.Logs())
	if m == nil {
		t.Fatalf("no --metrics-listen address in the daemon's log:\n%s", d.Logs())
	}
	return func() float64 {
		t.Helper()
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var sum float64
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "netdisk_http_requests_total{") {
				continue
			}
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			sum += v
		}
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		return sum
	}
}

// TestClientCommandsWithoutCredentials: a client command given no password
// (nor a terminal to ask on) or no user name says so in one line, exits 1
// and sends nothing: the daemon answers no request, logs no failed login,
// and the account is not throttled. Every client command, the mount's
// credential step included (it comes before the mount point is looked at).
func TestClientCommandsWithoutCredentials(t *testing.T) {
	d := testutil.StartDaemon(t, "--metrics-listen", "127.0.0.1:0")
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pass")
	ctx := context.Background()
	if _, err := client.New(d.URL, "alice", "alice-pass").Upload(ctx, "/f.txt", strings.NewReader("hello"), 5); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	local := filepath.Join(dir, "local.txt")
	os.WriteFile(local, []byte("local"), 0o644)
	requests := requestCounter(t, d)

	commands := [][]string{
		{"ls", "/"}, {"quota"}, {"push", local, "/local.txt"}, {"pull", "/f.txt", filepath.Join(dir, "out.txt")},
		{"pull", "/f.txt", filepath.Join(dir, "shared.txt"), "--shared-cache", filepath.Join(dir, "cache")},
		{"mkdir", "/d"}, {"mv", "/f.txt", "/g.txt"}, {"rm", "/f.txt"},
		{"agent", "--id", "a1", "--dir", filepath.Join(dir, "drop")},
		{"async", "add", "/f.txt", "--agent", "a1"}, {"async", "status", "AsyncDownloadTask:2:/f.txt:x"},
		{"mount", filepath.Join(dir, "mnt")},
		{"passwd", "--new-password", "x-pass"}, {"token", "add", "t"}, {"token", "ls"}, {"token", "rm", "t"},
	}
	before := requests()
	noPassword := []map[string]string{{"NETDISK_USER": "alice", "NETDISK_PASSWORD": ""}, {"NETDISK_USER": "", "NETDISK_PASSWORD": ""}}
	for _, args := range commands {
		flags := "--password"
		if args[0] == "mount" {
			flags = "--password-file"
		}
		failCLI(t, d, noPassword[0], 1, `no password given for "alice": set NETDISK_PASSWORD, use `+flags+`, or run on a terminal to be asked`, args...)
		// The user named by the flag, too.
		failCLI(t, d, noPassword[1], 1, `no password given for "alice"`, append(args, "--user", "alice")...)
		failCLI(t, d, map[string]string{"NETDISK_USER": "", "NETDISK_PASSWORD": "alice-pass"}, 1, "no user name given: use --user or set NETDISK_USER", args...)
	}
	if n := requests() - before; n != 0 {
		t.Errorf("the daemon answered %v requests to commands without credentials, want none", n)
	}
	if strings.Contains(d.Logs(), "auth failed") || strings.Contains(d.Logs(), "auth throttled") {
		t.Errorf("the daemon saw a failed login:\n%s", d.Logs())
	}

	// With the password the same commands reach the daemon (so the counter
	// above would have seen them), and the account is not throttled.
	if r := runCLI(t, d, map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pass"}, "ls", "/"); r.code != 0 || !strings.Contains(r.stdout, "f.txt") {
		t.Fatalf("ls with the password: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := requests() - before; n == 0 {
		t.Error("ls with the password sent no request: the counter proves nothing")
	}
}

// TestClientCommandsAskOnTerminal: on a terminal a client command without a
// password asks for it (without echo) and uses it; an empty answer is no
// password, refused before anything is sent.
func TestClientCommandsAskOnTerminal(t *testing.T) {
	d := testutil.StartDaemon(t, "--metrics-listen", "127.0.0.1:0")
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pass")
	requests := requestCounter(t, d)
	alice := map[string]string{"NETDISK_SERVER": d.URL, "NETDISK_USER": "alice"}
	const prompt = "Password for alice at "

	before := requests()
	out, code := onTerminal(t, alice, "quota", [2]string{prompt, ""})
	if code != 1 || !strings.Contains(out, `no password given for "alice"`) {
		t.Fatalf("empty answer: exit %d, output %q", code, out)
	}
	if n := requests() - before; n != 0 {
		t.Errorf("an empty answer sent %v requests", n)
	}

	out, code = onTerminal(t, alice, "quota", [2]string{prompt, "alice-pass"})
	if code != 0 || !strings.Contains(out, "quota unlimited") {
		t.Fatalf("typed password: exit %d, output %q", code, out)
	}
	if strings.Contains(out, "alice-pass") {
		t.Errorf("the password was echoed: %q", out)
	}
}
