package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/testutil"
)

// A push past the user's quota says what is free and what is needed in the
// units the CLI prints sizes in (and --quota takes), once: whether the file
// goes in one request (under smallFileLimit) or chunked (refused at init).
// A WebDAV client (curl) gets the same sentence in its 507's body.
func TestOverQuotaSaysHumanSizes(t *testing.T) {
	d, c := syncDaemon(t)
	if _, err := c.AdminAddUser(context.Background(), apitype.NewUser{Name: "dora", Password: "dora-pass-1", Quota: 100 << 10}); err != nil {
		t.Fatal(err)
	}
	dir := writeTree(t, t.TempDir(), map[string][]byte{
		"small.bin": testutil.RandBytes(300 << 10),
		"big.bin":   testutil.RandBytes(9 << 20), // over smallFileLimit (8 MiB): chunked
	})
	env := map[string]string{"NETDISK_USER": "dora", "NETDISK_PASSWORD": "dora-pass-1"}
	for name, needed := range map[string]string{"small.bin": "300 KiB needed", "big.bin": "9 MiB needed"} {
		r := runCLI(t, d, env, "push", filepath.Join(dir, name), "/")
		msg := strings.TrimSpace(r.stderr)
		if r.code == 0 || !strings.Contains(msg, "100 KiB free, "+needed) || strings.Contains(msg, "bytes") ||
			strings.Count(msg, "quota") != 1 {
			t.Errorf("push %s over quota: exit %d, stderr %q; want one mention of the quota saying 100 KiB free, %s", name, r.code, msg, needed)
		}
	}
	curl := testutil.RequireTool(t, "curl")
	out, err := exec.Command(curl, "-sS", "-w", "\n%{http_code}", "-u", "dora:dora-pass-1", "-T", filepath.Join(dir, "small.bin"),
		d.URL+"/dav/small.bin").CombinedOutput()
	body, code := strings.TrimSpace(string(out)), ""
	if i := strings.LastIndexByte(body, '\n'); i >= 0 {
		body, code = strings.TrimSpace(body[:i]), body[i+1:]
	}
	if err != nil || code != "507" ||
		!strings.Contains(body, "quota exceeded: 100 KiB free, 300 KiB needed") || strings.Contains(body, "bytes") {
		t.Errorf("curl PUT over quota: %v, %q", err, out)
	}
}

// The CLI prints sizes in the product's one format (internal/bytesize, as
// the page and the server's messages): "1 KiB", "26.7 MiB", not "1.0 KiB"
// or "27 MiB".
func TestCLISizes(t *testing.T) {
	d, c := syncDaemon(t)
	if _, err := c.AdminAddUser(context.Background(), apitype.NewUser{Name: "eli", Password: "eli-pass-1", Quota: 27996979}); err != nil {
		t.Fatal(err)
	}
	put(t, d, "/k.bin", "eli", "eli-pass-1", make([]byte, 1024))
	env := map[string]string{"NETDISK_USER": "eli", "NETDISK_PASSWORD": "eli-pass-1"}
	r := runCLI(t, d, env, "quota")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "quota 26.7 MiB, used 1 KiB in files") {
		t.Errorf("netdisk quota: exit %d, %q", r.code, r.stdout)
	}
	if r = runCLI(t, d, env, "ls", "/"); r.code != 0 || !strings.Contains(r.stdout, "1 KiB") || strings.Contains(r.stdout, "1.0 KiB") {
		t.Errorf("netdisk ls: exit %d, %q", r.code, r.stdout)
	}
}
