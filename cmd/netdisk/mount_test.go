package main

import (
	"os"
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
