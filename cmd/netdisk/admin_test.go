package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/testutil"
)

// These tests run the real binary against a real daemon, as an admin would.

const testChunkSize = 64 << 10 // small chunks keep multi-chunk files small

type cliResult struct {
	stdout, stderr string
	code           int
}

// runCLI runs `netdisk args...` with the connection taken from the
// environment (admin of d unless env overrides it).
func runCLI(t *testing.T, d *testutil.Daemon, env map[string]string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Binary(t), args...)
	vars := map[string]string{"NETDISK_SERVER": d.URL, "NETDISK_USER": "admin", "NETDISK_PASSWORD": d.AdminPass}
	for k, v := range env {
		vars[k] = v
	}
	cmd.Env = cliEnv(vars)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb // stdin stays /dev/null: not a terminal
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run netdisk %v: %v", args, err)
	}
	return r
}

// cliEnv is the test's environment without its NETDISK_ variables, plus
// vars: the connection a command under test uses is only what the test set.
func cliEnv(vars map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "NETDISK_") {
			env = append(env, kv)
		}
	}
	for k, v := range vars {
		env = append(env, k+"="+v)
	}
	return env
}

// onTerminal runs `netdisk args` (one shell command line) on a real
// pseudo-terminal, which script(1) from util-linux provides, with cliEnv(vars).
// It waits for each prompt in turn and types its answer, then returns all
// the command printed and its exit code.
func onTerminal(t *testing.T, vars map[string]string, args string, dialog ...[2]string) (string, int) {
	t.Helper()
	scriptBin := testutil.RequireTool(t, "script")
	cmd := exec.Command(scriptBin, "-qfec", testutil.Binary(t)+" "+args, "/dev/null")
	cmd.Env = cliEnv(vars)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	for _, d := range dialog {
		prompt, answer := d[0], d[1]
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(out.String(), prompt) {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("no prompt %q; output so far %q", prompt, out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		io.WriteString(in, answer+"\n")
	}
	select {
	case err := <-exited:
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("netdisk %s: %v", args, err)
		}
		return out.String(), code
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("netdisk did not exit; output %q", out.String())
	}
	return "", 0
}

// mustCLI runs the command and fails the test unless it exits 0.
func mustCLI(t *testing.T, d *testutil.Daemon, args ...string) string {
	t.Helper()
	r := runCLI(t, d, nil, args...)
	if r.code != 0 {
		t.Fatalf("netdisk %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// failCLI runs the command, wants exit code want and a stderr holding msg.
func failCLI(t *testing.T, d *testutil.Daemon, env map[string]string, want int, msg string, args ...string) {
	t.Helper()
	r := runCLI(t, d, env, args...)
	if r.code != want || !strings.Contains(r.stderr, msg) {
		t.Fatalf("netdisk %v: exit %d, stderr %q; want exit %d and %q", args, r.code, r.stderr, want, msg)
	}
	if n := strings.Count(strings.TrimSpace(r.stderr), "\n"); n != 0 {
		t.Errorf("netdisk %v: error spans %d lines, want one: %q", args, n+1, r.stderr)
	}
}

func listUsers(t *testing.T, d *testutil.Daemon) map[string]apitype.AdminUser {
	t.Helper()
	var us []apitype.AdminUser
	if err := json.Unmarshal([]byte(mustCLI(t, d, "admin", "user", "list", "--json")), &us); err != nil {
		t.Fatal(err)
	}
	m := map[string]apitype.AdminUser{}
	for _, u := range us {
		m[u.Name] = u
	}
	return m
}

// davStatus sends a request to /dav/ and returns its status.
func davStatus(t *testing.T, d *testutil.Daemon, method, path, user, pass string, body []byte) int {
	t.Helper()
	var hdr map[string]string
	if method == "PROPFIND" {
		hdr = map[string]string{"Depth": "0"}
	}
	resp, err := d.Do(context.Background(), method, "/dav"+path, user, pass, body, hdr)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func put(t *testing.T, d *testutil.Daemon, path, user, pass string, body []byte) {
	t.Helper()
	if st := davStatus(t, d, http.MethodPut, path, user, pass, body); st != http.StatusCreated && st != http.StatusNoContent {
		t.Fatalf("PUT %s as %s: %d", path, user, st)
	}
}

func del(t *testing.T, d *testutil.Daemon, path, user, pass string) {
	t.Helper()
	if st := davStatus(t, d, http.MethodDelete, path, user, pass, nil); st != http.StatusNoContent && st != http.StatusOK {
		t.Fatalf("DELETE %s as %s: %d", path, user, st)
	}
}

func stats(t *testing.T, d *testutil.Daemon) apitype.Stats {
	t.Helper()
	var s apitype.Stats
	if err := json.Unmarshal([]byte(mustCLI(t, d, "admin", "stats", "--json")), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// blobPath is where the disk store keeps a chunk: DATA/chunks/ab/cd/<sha256>.
func blobPath(d *testutil.Daemon, chunk []byte) string {
	s := sha256.Sum256(chunk)
	h := hex.EncodeToString(s[:])
	return filepath.Join(d.DataDir, "chunks", h[:2], h[2:4], h)
}

func TestAdminUserRoundTrip(t *testing.T) {
	d := testutil.StartDaemon(t)

	out := mustCLI(t, d, "admin", "user", "add", "bob", "--password", "bob-pass-1", "--quota", "10GiB")
	if !strings.Contains(out, "bob") || !strings.Contains(out, "10 GiB") {
		t.Errorf("add said %q", out)
	}
	u, ok := listUsers(t, d)["bob"]
	if !ok || u.Admin || u.Quota != 10<<30 || u.Created.IsZero() {
		t.Fatalf("bob after add: %+v (found %v)", u, ok)
	}
	if st := davStatus(t, d, "PROPFIND", "/", "bob", "bob-pass-1", nil); st != http.StatusMultiStatus {
		t.Fatalf("bob PROPFIND with his password: %d", st)
	}
	failCLI(t, d, nil, 1, `user "bob" exists`, "admin", "user", "add", "bob", "--password", "x")

	// The table has every column the brief asks for.
	table := mustCLI(t, d, "admin", "user", "list")
	for _, col := range []string{"NAME", "ADMIN", "QUOTA", "USED", "UNFINISHED", "CREATED", "bob", "10 GiB", "unlimited"} {
		if !strings.Contains(table, col) {
			t.Errorf("user list lacks %q:\n%s", col, table)
		}
	}

	mustCLI(t, d, "admin", "user", "quota", "bob", "500MB")
	if q := listUsers(t, d)["bob"].Quota; q != 500_000_000 {
		t.Errorf("quota after `quota bob 500MB` = %d", q)
	}
	mustCLI(t, d, "admin", "user", "quota", "bob", "unlimited")
	if q := listUsers(t, d)["bob"].Quota; q != 0 {
		t.Errorf("quota after `quota bob unlimited` = %d", q)
	}
	failCLI(t, d, nil, 1, `size "lots"`, "admin", "user", "quota", "bob", "lots")

	mustCLI(t, d, "admin", "user", "passwd", "bob", "--password", "bob-pass-2")
	if st := davStatus(t, d, "PROPFIND", "/", "bob", "bob-pass-1", nil); st != http.StatusUnauthorized {
		t.Errorf("old password after passwd: %d, want 401", st)
	}
	if st := davStatus(t, d, "PROPFIND", "/", "bob", "bob-pass-2", nil); st != http.StatusMultiStatus {
		t.Errorf("new password after passwd: %d, want 207", st)
	}

	// A second admin; neither may delete their own account.
	mustCLI(t, d, "admin", "user", "add", "root2", "--admin", "--password", "root2-pass")
	if !listUsers(t, d)["root2"].Admin {
		t.Fatal("root2 was not made an admin")
	}
	failCLI(t, d, nil, 1, "your own account", "admin", "user", "del", "--yes", "admin")
	mustCLI(t, d, "admin", "user", "del", "--yes", "bob")
	if _, ok := listUsers(t, d)["bob"]; ok {
		t.Fatal("bob still listed after del")
	}
	if st := davStatus(t, d, "PROPFIND", "/", "bob", "bob-pass-2", nil); st != http.StatusUnauthorized {
		t.Errorf("deleted bob PROPFIND: %d, want 401", st)
	}
	failCLI(t, d, nil, 1, `no such user "bob"`, "admin", "user", "del", "--yes", "bob")
	failCLI(t, d, nil, 1, `no such user "bob"`, "admin", "user", "passwd", "bob", "--password", "x")

	// root2 removes admin, then is the last admin and cannot remove itself.
	root2 := map[string]string{"NETDISK_USER": "root2", "NETDISK_PASSWORD": "root2-pass"}
	if r := runCLI(t, d, root2, "admin", "user", "del", "--yes", "admin"); r.code != 0 {
		t.Fatalf("root2 deleting admin: %d %s", r.code, r.stderr)
	}
	failCLI(t, d, root2, 1, "your own account", "admin", "user", "del", "--yes", "root2")
	if r := runCLI(t, d, root2, "admin", "user", "list", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"root2"`) {
		t.Fatalf("root2 lost access: %d %s", r.code, r.stderr)
	}
}

func TestAdminErrorsAreClearOneLiners(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "carol", "--password", "carol-pass")

	failCLI(t, d, map[string]string{"NETDISK_PASSWORD": "wrong"}, 1, "wrong user name or password", "admin", "stats")
	failCLI(t, d, map[string]string{"NETDISK_USER": "nobody", "NETDISK_PASSWORD": "wrong"}, 1, "wrong user name or password", "admin", "stats")
	// A non-admin is told so, for every kind of call.
	carol := map[string]string{"NETDISK_USER": "carol", "NETDISK_PASSWORD": "carol-pass"}
	for _, args := range [][]string{{"stats"}, {"gc"}, {"fsck"}, {"user", "list"}, {"user", "add", "eve", "--password", "p"}, {"user", "del", "--yes", "admin"}} {
		failCLI(t, d, carol, 1, "admin rights required", append([]string{"admin"}, args...)...)
	}
	if _, ok := listUsers(t, d)["eve"]; ok {
		t.Error("a non-admin created a user")
	}
	failCLI(t, d, map[string]string{"NETDISK_SERVER": "http://127.0.0.1:1"}, 1, "unreachable", "admin", "stats")
	// Flags override the environment.
	r := runCLI(t, d, map[string]string{"NETDISK_SERVER": "http://127.0.0.1:1", "NETDISK_PASSWORD": "wrong"},
		"admin", "stats", "--server", d.URL, "--user", "admin", "--password", d.AdminPass)
	if r.code != 0 {
		t.Errorf("flags did not override the environment: %d %s", r.code, r.stderr)
	}
	// Without a terminal there is no one to ask for a password.
	failCLI(t, d, nil, 1, "no password", "admin", "user", "add", "dave")
	failCLI(t, d, map[string]string{"NETDISK_PASSWORD": ""}, 1, "no password", "admin", "stats")
	failCLI(t, d, nil, 1, "--quota", "admin", "user", "add", "dave", "--password", "p", "--quota", "ten gigs")
}

func TestAdminHelpEverywhere(t *testing.T) {
	d := testutil.StartDaemon(t)
	for _, args := range [][]string{{"admin"}, {"admin", "user"}, {"admin", "user", "add"}, {"admin", "user", "list"},
		{"admin", "user", "del"}, {"admin", "user", "passwd"}, {"admin", "user", "quota"}, {"admin", "stats"},
		{"admin", "gc"}, {"admin", "fsck"}} {
		out := mustCLI(t, d, append(args, "--help")...)
		if !strings.Contains(out, "Usage:") || !strings.Contains(out, "Examples:") {
			t.Errorf("%v --help lacks usage or examples:\n%s", args, out)
		}
	}
}

func TestAdminStatsShowDedup(t *testing.T) {
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	mustCLI(t, d, "admin", "user", "add", "ann", "--password", "ann-pass")
	mustCLI(t, d, "admin", "user", "add", "ben", "--password", "ben-pass")
	data := testutil.RandomBytes(1, 5*testChunkSize+1234) // six chunks, the last one short
	put(t, d, "/same.bin", "ann", "ann-pass", data)
	put(t, d, "/other-name.bin", "ben", "ben-pass", data)

	s := stats(t, d)
	n := int64(len(data))
	if s.Users != 3 || s.Files != 2 || s.LogicalBytes != 2*n || s.PhysicalBytes != n || s.Chunks != 6 || s.DedupRatio != 2 {
		t.Fatalf("stats after two uploads of %d bytes: %+v; want logical %d, physical %d, 6 chunks, ratio 2", n, s, 2*n, n)
	}
	out := mustCLI(t, d, "admin", "stats")
	for _, want := range []string{"logical", "physical", "chunks", "dedup ratio", "2.00", "users"} {
		if !strings.Contains(out, want) {
			t.Errorf("stats output lacks %q:\n%s", want, out)
		}
	}
	// Usage shows in the user list.
	if u := listUsers(t, d)["ann"]; u.Finished != n {
		t.Errorf("ann uses %d, want %d", u.Finished, n)
	}
}

func TestAdminGCFreesOnlyUnreferencedChunks(t *testing.T) {
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	mustCLI(t, d, "admin", "user", "add", "ann", "--password", "ann-pass")
	mustCLI(t, d, "admin", "user", "add", "ben", "--password", "ben-pass")
	// shared = A|B|C, keep = A|D: deleting every copy of shared must free B
	// and C but keep A, which keep still references.
	a, b, c, dd := testutil.RandomBytes(10, testChunkSize), testutil.RandomBytes(11, testChunkSize), testutil.RandomBytes(12, testChunkSize), testutil.RandomBytes(13, 1000)
	shared := bytes.Join([][]byte{a, b, c}, nil)
	keep := bytes.Join([][]byte{a, dd}, nil)
	put(t, d, "/shared.bin", "ann", "ann-pass", shared)
	put(t, d, "/shared.bin", "ben", "ben-pass", shared)
	put(t, d, "/keep.bin", "ben", "ben-pass", keep)
	for _, ch := range [][]byte{a, b, c, dd} {
		if _, err := os.Stat(blobPath(d, ch)); err != nil {
			t.Fatalf("chunk not stored where expected: %v", err)
		}
	}

	// While one copy remains, nothing is freed.
	del(t, d, "/shared.bin", "ann", "ann-pass")
	var r apitype.GCResult
	json.Unmarshal([]byte(mustCLI(t, d, "admin", "gc", "--json")), &r)
	if r.Chunks != 0 {
		t.Fatalf("gc freed %d chunks while ben still holds them", r.Chunks)
	}

	del(t, d, "/shared.bin", "ben", "ben-pass")
	// Deleted files wait in their owners' trash, which holds their chunks:
	// each owner's expunge is what frees them.
	json.Unmarshal([]byte(mustCLI(t, d, "admin", "gc", "--json")), &r)
	if r.Chunks != 0 {
		t.Fatalf("gc freed %d chunks the trash holds", r.Chunks)
	}
	emptyAs := func(user, pass string) {
		t.Helper()
		if res := runCLI(t, d, map[string]string{"NETDISK_USER": user, "NETDISK_PASSWORD": pass}, "trash", "empty", "--yes"); res.code != 0 {
			t.Fatalf("trash empty as %s: exit %d, %s", user, res.code, res.stderr)
		}
	}
	emptyAs("ann", "ann-pass")
	json.Unmarshal([]byte(mustCLI(t, d, "admin", "gc", "--json")), &r)
	if r.Chunks != 0 {
		t.Fatalf("gc freed %d chunks while ben's trash still holds them", r.Chunks)
	}
	emptyAs("ben", "ben-pass")
	out := mustCLI(t, d, "admin", "gc")
	if !strings.Contains(out, "freed 2 chunk(s), 128 KiB") {
		t.Fatalf("gc said %q, want 2 chunks / 128 KiB freed", out)
	}
	for _, ch := range [][]byte{b, c} {
		if _, err := os.Stat(blobPath(d, ch)); !os.IsNotExist(err) {
			t.Errorf("freed chunk still on disk (err %v)", err)
		}
	}
	for _, ch := range [][]byte{a, dd} {
		if _, err := os.Stat(blobPath(d, ch)); err != nil {
			t.Errorf("live chunk gone: %v", err)
		}
	}
	if s := stats(t, d); s.Chunks != 2 || s.PhysicalBytes != int64(len(keep)) || s.LogicalBytes != int64(len(keep)) {
		t.Errorf("stats after gc: %+v", s)
	}
	resp, err := d.Do(context.Background(), http.MethodGet, "/dav/keep.bin", "ben", "ben-pass", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(got, keep) {
		t.Errorf("keep.bin after gc: %d bytes, status %d; want the %d bytes uploaded", len(got), resp.StatusCode, len(keep))
	}
	mustCLI(t, d, "admin", "fsck") // and the survivors are sound
}

func TestAdminFsckFindsMissingAndCorruptChunks(t *testing.T) {
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	chunks := [][]byte{testutil.RandomBytes(20, testChunkSize), testutil.RandomBytes(21, testChunkSize), testutil.RandomBytes(22, testChunkSize), testutil.RandomBytes(23, 10)}
	put(t, d, "/f.bin", "admin", d.AdminPass, bytes.Join(chunks, nil))

	out := mustCLI(t, d, "admin", "fsck")
	if !strings.Contains(out, "checked 4 chunk(s)") || !strings.Contains(out, "0 problem(s)") {
		t.Fatalf("clean fsck said %q", out)
	}

	// Corrupt one chunk in place (same length, so only the hash can tell)
	// and remove another.
	corrupt, missing := blobPath(d, chunks[1]), blobPath(d, chunks[2])
	os.Chmod(corrupt, 0o600)
	bad := bytes.Clone(chunks[1])
	bad[100] ^= 0xff
	if err := os.WriteFile(corrupt, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(missing); err != nil {
		t.Fatal(err)
	}

	r := runCLI(t, d, nil, "admin", "fsck")
	if r.code != exitFsckProblems {
		t.Fatalf("fsck with damage: exit %d, want %d\n%s%s", r.code, exitFsckProblems, r.stdout, r.stderr)
	}
	for _, want := range []string{"corrupt", filepath.Base(corrupt), "missing", filepath.Base(missing), "2 problem(s)"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("fsck output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "2 of 4 chunks missing or corrupt") {
		t.Errorf("fsck stderr: %q", r.stderr)
	}

	r = runCLI(t, d, nil, "admin", "fsck", "--json")
	var res apitype.FsckResult
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != exitFsckProblems {
		t.Fatalf("fsck --json: exit %d, %v\n%s", r.code, err, r.stdout)
	}
	kinds := map[string]string{}
	for _, p := range res.Problems {
		kinds[p.SHA256] = p.Problem
	}
	if res.Checked != 4 || len(res.Problems) != 2 || kinds[filepath.Base(corrupt)] != "corrupt" || kinds[filepath.Base(missing)] != "missing" {
		t.Errorf("fsck --json: %+v", res)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"500MB": 500_000_000, "10GiB": 10 << 30, "1.5TB": 1_500_000_000_000, "1024": 1024, "64 KiB": 64 << 10,
		"0": 0, "unlimited": 0, "Unlimited": 0, "none": 0, "2gib": 2 << 30,
	} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-5MB", "10XB", "99999999999EB"} {
		if n, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, n)
		}
	}
	if got := formatQuota(10 << 30); got != "10 GiB" {
		t.Errorf("formatQuota(10GiB) = %q", got)
	}
	if got := formatQuota(0); got != "unlimited" {
		t.Errorf("formatQuota(0) = %q", got)
	}
}

// TestAdminPromptsOnTerminal runs `user add` without --password on a real
// pseudo-terminal (script(1) from util-linux provides one): it asks twice,
// does not echo, and the user can then sign in with what was typed.
func TestAdminPromptsOnTerminal(t *testing.T) {
	d := testutil.StartDaemon(t)
	typeInto := func(name, first, again string) (string, int) {
		t.Helper()
		return onTerminal(t, map[string]string{"NETDISK_SERVER": d.URL, "NETDISK_USER": "admin", "NETDISK_PASSWORD": d.AdminPass},
			"admin user add "+name+" --quota 1GiB",
			[2]string{"New password for " + name + ":", first}, [2]string{"Repeat it:", again})
	}

	out, code := typeInto("dora", "dora-secret-77", "dora-secret-77")
	if code != 0 || !strings.Contains(out, "added user dora") {
		t.Fatalf("exit %d, output %q", code, out)
	}
	if strings.Contains(out, "dora-secret-77") {
		t.Errorf("the password was echoed: %q", out)
	}
	if st := davStatus(t, d, "PROPFIND", "/", "dora", "dora-secret-77", nil); st != http.StatusMultiStatus {
		t.Errorf("dora with the typed password: %d", st)
	}

	out, code = typeInto("eric", "one-thing", "another")
	if code != 1 || !strings.Contains(out, "do not match") {
		t.Fatalf("mismatched passwords: exit %d, output %q", code, out)
	}
	if _, ok := listUsers(t, d)["eric"]; ok {
		t.Error("eric was created despite mismatched passwords")
	}
}

// TestAdminUserNamesIgnoreCase: ALICE and alice are one user, through the
// CLI and the admin API of a real daemon; signing in ignores case too.
func TestAdminUserNamesIgnoreCase(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pass")
	failCLI(t, d, nil, 1, "exists", "admin", "user", "add", "ALICE", "--password", "other-pass")
	resp, err := d.Do(context.Background(), "POST", "/api/v1/admin/users", "admin", d.AdminPass,
		[]byte(`{"name":"Alice","password":"other-pass"}`), map[string]string{"Content-Type": "application/json"})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(body), "exists") {
		t.Fatalf("POST Alice next to alice: %d %s, want 409 exists", resp.StatusCode, body)
	}
	if users := listUsers(t, d); len(users) != 2 {
		t.Fatalf("users after the refused adds: %v", users)
	}
	for _, n := range []string{"alice", "ALICE"} {
		if st := davStatus(t, d, "PROPFIND", "/", n, "alice-pass", nil); st != http.StatusMultiStatus {
			t.Fatalf("PROPFIND as %s: %d, want 207", n, st)
		}
	}
	if st := davStatus(t, d, "PROPFIND", "/", "ALICE", "other-pass", nil); st != http.StatusUnauthorized {
		t.Fatalf("ALICE with the refused account's password: %d, want 401", st)
	}
	mustCLI(t, d, "admin", "user", "del", "--yes", "ALICE")
	if _, ok := listUsers(t, d)["alice"]; ok {
		t.Fatal("alice still listed after `del ALICE`")
	}
}

// TestAdminUserDelConfirms: deleting a user cannot be undone, so `user del`
// never takes a missing answer as a yes. Without a terminal it refuses in
// one line with exit 2 unless --yes is given, before asking the server
// anything; on a terminal it asks, and only "y" deletes.
func TestAdminUserDelConfirms(t *testing.T) {
	d := testutil.StartDaemon(t)
	for _, name := range []string{"bob", "carl"} {
		mustCLI(t, d, "admin", "user", "add", name, "--password", name+"-pass")
	}
	exists := func(name string) bool { _, ok := listUsers(t, d)[name]; return ok }

	// Off a terminal, with or without the admin's password at hand, and by
	// every name of the command.
	for _, env := range []map[string]string{nil, {"NETDISK_PASSWORD": ""}} {
		for _, verb := range []string{"del", "delete", "rm"} {
			failCLI(t, d, env, 2, `not deleting user "bob" without confirmation: stdin is not a terminal to ask on (add --yes)`, "admin", "user", verb, "bob")
		}
	}
	if !exists("bob") {
		t.Fatal("bob was deleted without --yes and without a terminal")
	}
	mustCLI(t, d, "admin", "user", "del", "--yes", "bob")
	if exists("bob") {
		t.Fatal("bob still listed after del --yes")
	}

	// On a terminal: asked, and anything but y keeps the user.
	admin := map[string]string{"NETDISK_SERVER": d.URL, "NETDISK_USER": "admin", "NETDISK_PASSWORD": d.AdminPass}
	const question = `Delete user "carl" and all their files? [y/N]`
	out, code := onTerminal(t, admin, "admin user del carl", [2]string{question, "n"})
	if code != 1 || !strings.Contains(out, "not deleted") || !exists("carl") {
		t.Fatalf("answering n: exit %d, output %q, carl listed %v", code, out, exists("carl"))
	}
	out, code = onTerminal(t, admin, "admin user del carl", [2]string{question, "y"})
	if code != 0 || !strings.Contains(out, "deleted user carl") || exists("carl") {
		t.Fatalf("answering y: exit %d, output %q, carl listed %v", code, out, exists("carl"))
	}
}

// The user list shows, beside the bytes of a user's files, those of their
// trash and of their files' versions, in the table and in --json.
func TestAdminUserListHistoryUsage(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "ann", "--password", "ann-pass")
	mustCLI(t, d, "admin", "user", "add", "ben", "--password", "ben-pass")
	// Two overwrites keep the 1000- and the 3000-byte contents as
	// versions; a deleted file goes to the trash.
	put(t, d, "/a.txt", "ann", "ann-pass", testutil.RandomBytes(1, 1000))
	put(t, d, "/a.txt", "ann", "ann-pass", testutil.RandomBytes(2, 3000))
	put(t, d, "/a.txt", "ann", "ann-pass", testutil.RandomBytes(3, 500))
	put(t, d, "/b.txt", "ann", "ann-pass", testutil.RandomBytes(4, 700))
	del(t, d, "/b.txt", "ann", "ann-pass")
	put(t, d, "/c.txt", "ben", "ben-pass", testutil.RandomBytes(5, 10))

	us := listUsers(t, d)
	if u := us["ann"]; u.Finished != 500 || u.Trash != 700 || u.Versions != 4000 {
		t.Errorf("ann: %d in files, %d in the trash, %d in versions; want 500, 700, 4000", u.Finished, u.Trash, u.Versions)
	}
	if u := us["ben"]; u.Finished != 10 || u.Trash != 0 || u.Versions != 0 {
		t.Errorf("ben: %d in files, %d in the trash, %d in versions; want 10, 0, 0", u.Finished, u.Trash, u.Versions)
	}
	table := strings.Split(strings.TrimSpace(mustCLI(t, d, "admin", "user", "list")), "\n")
	head := strings.Fields(table[0])
	if want := []string{"NAME", "ADMIN", "QUOTA", "USED", "TRASH", "VERSIONS"}; len(head) < len(want) || !slices.Equal(head[:len(want)], want) {
		t.Fatalf("user list header %q, want it to start with %q", table[0], want)
	}
	rows := map[string][]string{}
	for _, l := range table[1:] {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	// ibytes prints "500 B": two fields per size after QUOTA ("unlimited").
	if r := rows["ann"]; len(r) < 9 || strings.Join(r[3:9], " ") != "500 B 700 B 3.91 KiB" {
		t.Errorf("ann's row %q: want used 500 B, trash 700 B, versions 3.91 KiB", r)
	}
	if r := rows["ben"]; len(r) < 9 || strings.Join(r[3:9], " ") != "10 B 0 B 0 B" {
		t.Errorf("ben's row %q: want used 10 B, trash 0 B, versions 0 B", r)
	}
}
