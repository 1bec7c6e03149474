package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"netdisk/testutil"
)

// TestMountPassword: `netdisk mount` takes the password from
// NETDISK_PASSWORD, --password-file or a prompt on a terminal, so it need
// not show in ps, and warns when --password is given. The mount point does
// not exist: an error about it (not "cannot reach") shows the password was
// accepted by the server, which is checked first.
func TestMountPassword(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pass")
	mnt := filepath.Join(t.TempDir(), "no-such-mountpoint")
	accepted := func(what string, r cliResult) {
		t.Helper()
		if r.code != 1 || !strings.Contains(r.stderr, "no-such-mountpoint") || strings.Contains(r.stderr, "cannot reach") {
			t.Errorf("%s: exit %d, stderr %q; want the mount point's error", what, r.code, r.stderr)
		}
	}
	refused := func(what string, r cliResult) {
		t.Helper()
		if r.code != 1 || !strings.Contains(r.stderr, "cannot reach") {
			t.Errorf("%s: exit %d, stderr %q; want the server to refuse", what, r.code, r.stderr)
		}
	}
	const warning = "warning: --password shows in ps"
	alice := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": ""}

	r := runCLI(t, d, alice, "mount", "--password", "alice-pass", mnt)
	accepted("--password", r)
	if !strings.Contains(r.stderr, warning) {
		t.Errorf("--password: no warning in %q", r.stderr)
	}

	r = runCLI(t, d, map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pass"}, "mount", mnt)
	accepted("NETDISK_PASSWORD", r)
	if strings.Contains(r.stderr, warning) {
		t.Errorf("NETDISK_PASSWORD: warned %q", r.stderr)
	}

	pf := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pf, []byte("alice-pass\n"), 0o600)
	r = runCLI(t, d, alice, "mount", "--password-file", pf, mnt)
	accepted("--password-file", r)
	if strings.Contains(r.stderr, warning) {
		t.Errorf("--password-file: warned %q", r.stderr)
	}
	// The file, named explicitly, wins over the environment.
	accepted("--password-file over NETDISK_PASSWORD", runCLI(t, d, map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "wrong"}, "mount", "--password-file", pf, mnt))
	os.WriteFile(pf, []byte("wrong\n"), 0o600)
	refused("wrong password in the file", runCLI(t, d, alice, "mount", "--password-file", pf, mnt))
	failCLI(t, d, alice, 1, "--password-file", "mount", "--password-file", filepath.Join(t.TempDir(), "absent"), mnt)

	// On a terminal it asks, without echo.
	o, code := onTerminal(t, map[string]string{"NETDISK_SERVER": d.URL, "NETDISK_USER": "alice"}, "mount "+mnt,
		[2]string{"Password for alice at ", "alice-pass"})
	if code != 1 {
		t.Fatalf("prompted mount: exit %d, output %q", code, o)
	}
	if strings.Contains(o, "alice-pass") {
		t.Errorf("the password was echoed: %q", o)
	}
	if !strings.Contains(o, "no-such-mountpoint") || strings.Contains(o, "cannot reach") {
		t.Errorf("prompted mount: output %q; want the mount point's error", o)
	}
}

// TestMountDaemonLogFile: `mount --daemon` logs to a file of its own mount
// point in the user's state folder (created 0600), or to --log-file, and
// refuses a symlink planted at the name instead of writing through it.
func TestMountDaemonLogFile(t *testing.T) {
	fusermount := testutil.RequireTool(t, "fusermount3")
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "alice", "--password", "alice-pass")
	state, tmp := t.TempDir(), t.TempDir()
	env := map[string]string{"NETDISK_USER": "alice", "NETDISK_PASSWORD": "alice-pass",
		"XDG_STATE_HOME": state, "TMPDIR": tmp}
	base := t.TempDir()
	mountAt := func(name string, args ...string) (string, cliResult) {
		t.Helper()
		mnt := filepath.Join(base, name)
		if err := os.Mkdir(mnt, 0o755); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, d, env, append(append([]string{"mount", "--daemon", "--cache-dir", filepath.Join(base, "cache-"+name)}, args...), mnt)...)
		if r.code == 0 {
			t.Cleanup(func() { exec.Command(fusermount, "-u", "-z", mnt).Run() })
		}
		return mnt, r
	}
	logOf := func(mnt string) string {
		return filepath.Join(state, "netdisk", "mount-"+strings.ReplaceAll(strings.Trim(mnt, "/"), "/", "-")+".log")
	}

	// Two mounts, two logs, each named in the mount's message.
	var mnts []string
	for _, name := range []string{"one", "two"} {
		mnt, r := mountAt(name)
		if r.code != 0 {
			t.Fatalf("mount --daemon %s: exit %d, %s", name, r.code, r.stderr)
		}
		want := logOf(mnt)
		if strings.Contains(mnt, "-") || strings.Contains(mnt, "\\") {
			t.Fatalf("temp dir %s has a byte the test's escape does not model", mnt)
		}
		if !strings.Contains(r.stdout, "log "+want) {
			t.Errorf("mount --daemon %s says %q, want its log %s", name, r.stdout, want)
		}
		mnts = append(mnts, mnt)
	}
	for _, mnt := range mnts {
		st, err := os.Stat(logOf(mnt))
		if err != nil {
			t.Fatalf("no log for %s: %v", mnt, err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("log %s has mode %v, want 0600", logOf(mnt), st.Mode().Perm())
		}
		b, _ := os.ReadFile(logOf(mnt))
		if !strings.Contains(string(b), "mounted") || !strings.Contains(string(b), mnt) {
			t.Errorf("log of %s: %q, want its mount line", mnt, b)
		}
		for _, other := range mnts {
			if other != mnt && strings.Contains(string(b), other) {
				t.Errorf("log of %s holds lines of %s", mnt, other)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "netdisk-mount.log")); err == nil {
		t.Errorf("a shared log was written in TMPDIR")
	}

	// --log-file names it.
	own := filepath.Join(t.TempDir(), "logs", "mine.log")
	mnt, r := mountAt("three", "--log-file", own)
	if r.code != 0 || !strings.Contains(r.stdout, "log "+own) {
		t.Fatalf("mount --log-file: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(own); err != nil || !strings.Contains(string(b), mnt) {
		t.Errorf("--log-file %s: %q, %v", own, b, err)
	}

	// A symlink at the name is not followed: the mount refuses to start.
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	link := filepath.Join(t.TempDir(), "planted.log")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	_, r = mountAt("four", "--log-file", link)
	if r.code == 0 || !strings.Contains(r.stderr, "--log-file") {
		t.Errorf("mount through a planted symlink: exit %d, stderr %q; want a --log-file error", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
}
