package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"netdisk/apitype"
	"netdisk/testutil"
)

// cli runs the built binary as admin of e's daemon and requires success.
func (e *env) cli(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(testutil.Binary(e.t), args...)
	cmd.Env = append(os.Environ(), "NETDISK_SERVER="+e.d.URL, "NETDISK_USER=admin", "NETDISK_PASSWORD="+e.d.AdminPass)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		e.t.Fatalf("netdisk %v: %v: %s", args, err, errb.String())
	}
	return out.String()
}

// versions lists p's versions through `netdisk versions ls --json`.
func (e *env) versions(p string) apitype.VersionList {
	e.t.Helper()
	var l apitype.VersionList
	if err := json.Unmarshal([]byte(e.cli("versions", "ls", "--json", p)), &l); err != nil {
		e.t.Fatal(err)
	}
	return l
}

// mountDrive runs `netdisk mount` in the foreground on a new mount point
// and waits until the drive shows through it (file probe exists); unmounted
// at cleanup.
func (e *env) mountDrive(probe string) string {
	e.t.Helper()
	mnt := e.t.TempDir()
	cmd := exec.Command(testutil.Binary(e.t), "mount", "--server", e.d.URL, "--user", "admin", "--cache-dir", e.t.TempDir(), mnt)
	cmd.Env = append(os.Environ(), "NETDISK_PASSWORD="+e.d.AdminPass)
	out := &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	e.t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		exec.Command("fusermount3", "-u", "-z", mnt).Run()
	})
	waitFor(e.t, 30*time.Second, "the mount", func() bool {
		select {
		case <-exited:
			e.t.Fatalf("netdisk mount exited: %s", out.String())
		default:
		}
		_, err := os.Stat(filepath.Join(mnt, probe))
		return err == nil
	})
	return mnt
}

// TestVersionsOnEverySurface: an overwrite through WebDAV (curl PUT and
// MOVE), the API (netdisk push) and the mount (sed -i, an editor's save: a
// temporary file renamed over the file, a write in place) each add exactly
// one version, the replaced bytes; `versions get` returns a version's bytes, and `versions restore`
// brings the old bytes back and keeps the newer content as a version.
func TestVersionsOnEverySurface(t *testing.T) {
	testutil.RequireTool(t, "curl")
	testutil.RequireTool(t, "sed")
	testutil.RequireTool(t, "fusermount3")
	// Saves seconds apart are what thinning removes: the versions loop is
	// held off, so every one is counted.
	e := start(t, "--versions-interval", "1000h")
	contents := [][]byte{[]byte("one: the first words\n")}
	e.put("admin", e.d.AdminPass, "/dav/notes.txt", contents[0])
	step := func(what string, want []byte) {
		t.Helper()
		l := e.versions("/notes.txt")
		if len(l.Versions) != len(contents) {
			t.Fatalf("%s: %d versions, want %d", what, len(l.Versions), len(contents))
		}
		e.mustGet("admin", e.d.AdminPass, "/dav/notes.txt", want)
		out := filepath.Join(t.TempDir(), "v")
		e.cli("versions", "get", "/notes.txt", strconv.FormatInt(l.Versions[0].ID, 10), "-o", out)
		if got, _ := os.ReadFile(out); !bytes.Equal(got, contents[len(contents)-1]) {
			t.Fatalf("%s: the newest version holds %q, want %q", what, got, contents[len(contents)-1])
		}
		contents = append(contents, want)
	}

	// WebDAV through curl.
	two := []byte("two: rewritten over WebDAV\n")
	curl := exec.Command("curl", "-sf", "-u", "admin:"+e.d.AdminPass, "-T", "-", e.d.URL+"/dav/notes.txt")
	curl.Stdin = bytes.NewReader(two)
	if out, err := curl.CombinedOutput(); err != nil {
		t.Fatalf("curl PUT: %v %s", err, out)
	}
	step("a WebDAV PUT", two)

	// WebDAV MOVE of another file over it (rclone's and many clients' save).
	twoB := []byte("two and a half: moved over by WebDAV\n")
	e.put("admin", e.d.AdminPass, "/dav/incoming.tmp", twoB)
	move := exec.Command("curl", "-sf", "-u", "admin:"+e.d.AdminPass, "-X", "MOVE", "-H", "Destination: "+e.d.URL+"/dav/notes.txt",
		"-H", "Overwrite: T", e.d.URL+"/dav/incoming.tmp")
	if out, err := move.CombinedOutput(); err != nil {
		t.Fatalf("curl MOVE: %v %s", err, out)
	}
	step("a WebDAV MOVE over the file", twoB)

	// The API through netdisk push.
	three := []byte("three: pushed by the CLI\n")
	local := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(local, three, 0o644)
	e.cli("push", local, "/notes.txt")
	step("netdisk push", three)

	// The mount: sed -i writes a temporary file and renames it over.
	mnt := e.mountDrive("notes.txt")
	if out, err := exec.Command("sed", "-i", "s/three/four/", filepath.Join(mnt, "notes.txt")).CombinedOutput(); err != nil {
		t.Fatalf("sed -i: %v %s", err, out)
	}
	step("sed -i in the mount", []byte("four: pushed by the CLI\n"))

	// An editor's save: write the whole file to a temporary name, rename it over.
	five := []byte("five: saved by an editor\n")
	tmp := filepath.Join(mnt, ".notes.txt.swp")
	if err := os.WriteFile(tmp, five, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(mnt, "notes.txt")); err != nil {
		t.Fatal(err)
	}
	step("an editor's save in the mount", five)

	// A write in place: open with O_TRUNC, write, close.
	six := []byte("six: written in place\n")
	if err := os.WriteFile(filepath.Join(mnt, "notes.txt"), six, 0o644); err != nil {
		t.Fatal(err)
	}
	step("a write in place in the mount", six)
	latest := six

	// Restore the first content: the file holds it again, the content it
	// replaced is the newest version, and the count is unchanged (the
	// restored version is the content now).
	l := e.versions("/notes.txt")
	oldest := l.Versions[len(l.Versions)-1]
	out := e.cli("versions", "restore", "/notes.txt", strconv.FormatInt(oldest.ID, 10))
	if !strings.Contains(out, "restored /notes.txt") {
		t.Fatalf("versions restore said %q", out)
	}
	e.mustGet("admin", e.d.AdminPass, "/dav/notes.txt", contents[0])
	after := e.versions("/notes.txt")
	if len(after.Versions) != len(l.Versions) {
		t.Fatalf("after the restore %d versions, want %d", len(after.Versions), len(l.Versions))
	}
	got := filepath.Join(t.TempDir(), "newest")
	e.cli("versions", "get", "/notes.txt", strconv.FormatInt(after.Versions[0].ID, 10), "-o", got)
	if b, _ := os.ReadFile(got); !bytes.Equal(b, latest) {
		t.Fatalf("the newest version after the restore holds %q, want %q", b, latest)
	}
	for _, v := range after.Versions {
		if v.ID == oldest.ID {
			t.Fatalf("the restored version is still listed: %+v", after.Versions)
		}
	}
	// Range works on a version's download, as on any download.
	st, body, _ := e.call("GET", "/api/v1/versions/content?path=/notes.txt&version="+strconv.FormatInt(after.Versions[0].ID, 10),
		"admin", e.d.AdminPass, nil, map[string]string{"Range": "bytes=6-10"})
	if st != 206 || string(body) != string(latest[6:11]) {
		t.Fatalf("a ranged version download: %d %q", st, body)
	}
	// A folder has no versions; a version of another file is not found.
	e.mkcol("admin", e.d.AdminPass, "/dav/dir/")
	if st, _, _ := e.call("GET", "/api/v1/versions?path=/dir", "admin", e.d.AdminPass, nil, nil); st != 400 {
		t.Fatalf("versions of a folder: %d, want 400", st)
	}
	e.put("admin", e.d.AdminPass, "/dav/other.txt", []byte("x"))
	if st, _, _ := e.call("GET", "/api/v1/versions/content?path=/other.txt&version="+strconv.FormatInt(after.Versions[0].ID, 10),
		"admin", e.d.AdminPass, nil, nil); st != 404 {
		t.Fatalf("another file's version: %d, want 404", st)
	}
}

// TestVersionsRetentionLoop: the daemon's versions loop applies
// --versions-max (and the thinning schedule) by itself.
func TestVersionsRetentionLoop(t *testing.T) {
	e := start(t, "--versions-max", "1", "--versions-interval", "100ms")
	for i := range 4 {
		e.put("admin", e.d.AdminPass, "/dav/f.txt", []byte(strings.Repeat("x", i+1)))
	}
	waitFor(t, 30*time.Second, "the versions loop to keep one version", func() bool {
		return len(e.versions("/f.txt").Versions) == 1
	})
	out := filepath.Join(t.TempDir(), "v")
	e.cli("versions", "get", "/f.txt", strconv.FormatInt(e.versions("/f.txt").Versions[0].ID, 10), "-o", out)
	if b, _ := os.ReadFile(out); string(b) != "xxx" {
		t.Fatalf("the version kept holds %q, want the newest replaced content", b)
	}
}
