package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

// startTLS starts a daemon serving HTTPS with a certificate of a CA the
// test made, and an env whose client trusts that CA and offers HTTP/2.
func startTLS(t *testing.T) (*env, *testutil.TestCA) {
	t.Helper()
	ca := testutil.NewTestCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	ca.Issue(t, cert, key)
	e := start(t, "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(e.d.URL, "https://") {
		t.Fatalf("daemon URL %s", e.d.URL)
	}
	tr := e.c.Transport.(*http.Transport)
	tr.TLSClientConfig = &tls.Config{RootCAs: ca.Pool}
	tr.ForceAttemptHTTP2 = true
	return e, ca
}

// protocols reads the daemon's requests by HTTP version through /metrics.
func (e *env) protocols() map[string]int {
	e.t.Helper()
	got, err := e.d.RequestsByProtocol(ctxFor(e.t), e.c)
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// speaks runs client and fails the test unless the daemon saw its requests
// over the HTTP version want ("2" or "1.1") and none over another. The
// metrics read before the client ran is itself one HTTP/2 request counted.
func (e *env) speaks(want string, client func()) {
	e.t.Helper()
	before := e.protocols()
	client()
	after := e.protocols()
	delta := map[string]int{}
	for _, p := range []string{"1.0", "1.1", "2"} {
		delta[p] = after[p] - before[p]
	}
	delta["2"]-- // the metrics read of before
	for p, n := range delta {
		if p == want && n == 0 {
			e.t.Errorf("no request over HTTP %s (by version: %v)", want, delta)
		}
		if p != want && n != 0 {
			e.t.Errorf("%d requests over HTTP %s, want every one over %s (by version: %v)", n, p, want, delta)
		}
	}
}

// TestTLSClients: real clients, each verifying the daemon's certificate
// against the test's CA, work over HTTPS and reach HTTP/2 where they speak
// it: curl and rclone (Go's HTTP/2) do; litmus, davfs2 and cadaver are built
// on neon, which speaks HTTP/1.1 only.
func TestTLSClients(t *testing.T) {
	e, ca := startTLS(t)
	data := testutil.RandBytes(6<<20 + 7)

	t.Run("curl", func(t *testing.T) {
		curl := testutil.RequireTool(t, "curl")
		src := filepath.Join(t.TempDir(), "up.bin")
		os.WriteFile(src, data, 0o600)
		e.speaks("2", func() {
			out, err := exec.Command(curl, "-sS", "--http2", "--cacert", ca.CAFile, "-u", "admin:"+e.d.AdminPass,
				"-T", src, "-o", "/dev/null", "-w", "%{http_version} %{http_code}", e.d.URL+"/dav/curl.bin").CombinedOutput()
			if err != nil || (string(out) != "2 201" && string(out) != "2 204") {
				t.Fatalf("curl --http2 PUT: %q, %v; want \"2 201\"", out, err)
			}
		})
		e.mustGet("admin", e.d.AdminPass, "/dav/curl.bin", data)
		// Without the CA curl refuses the certificate: the test's trust is
		// what lets it through, not a lax client.
		if out, err := exec.Command(curl, "-sS", "-o", "/dev/null", e.d.URL+"/healthz").CombinedOutput(); err == nil {
			t.Errorf("curl without --cacert accepted the test CA's certificate: %s", out)
		}
	})

	t.Run("rclone", func(t *testing.T) {
		testutil.RequireTool(t, "rclone")
		src := t.TempDir()
		os.MkdirAll(filepath.Join(src, "sub"), 0o755)
		os.WriteFile(filepath.Join(src, "big.bin"), data, 0o644)
		os.WriteFile(filepath.Join(src, "sub", "small.txt"), []byte("small"), 0o644)
		run := e.rclone(t, "other", "admin", e.d.AdminPass)
		back := t.TempDir()
		e.speaks("2", func() {
			run("--ca-cert", ca.CAFile, "copy", src, "nd:rclone")
			run("--ca-cert", ca.CAFile, "check", src, "nd:rclone")
			run("--ca-cert", ca.CAFile, "copy", "nd:rclone", back)
		})
		if b, err := os.ReadFile(filepath.Join(back, "big.bin")); err != nil || !bytes.Equal(b, data) {
			t.Errorf("rclone's copy back: %d bytes, %v; want the %d sent", len(b), err, len(data))
		}
		e.mustGet("admin", e.d.AdminPass, "/dav/rclone/sub/small.txt", []byte("small"))
	})

	t.Run("litmus", func(t *testing.T) {
		// litmus (neon) takes https:// URLs but accepts any certificate
		// (it sets a verify callback that says yes): it proves the
		// WebDAV semantics hold over TLS, not that it checks the CA. Its
		// http suite skips expect100, a raw socket test, for an SSL
		// server, so that suite runs 3 tests.
		suites := slices.Clone(testutil.LitmusSuites)
		for i := range suites {
			if suites[i].Name == "http" {
				suites[i].Tests--
			}
		}
		e.speaks("1.1", func() {
			testutil.RunLitmus(t, e.d.URL+"/dav/", "admin", e.d.AdminPass, suites)
		})
	})

	t.Run("davfs2", func(t *testing.T) {
		mnt := mountDavfs(t, e, ca)
		e.speaks("1.1", func() {
			if err := os.WriteFile(filepath.Join(mnt, "from-davfs.bin"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			// davfs2 uploads a file when it is closed, in the background:
			// unmounting waits for the upload (umount.davfs says so).
			unmountDavfs(t, mnt)
		})
		e.mustGet("admin", e.d.AdminPass, "/dav/from-davfs.bin", data)
		e.put("admin", e.d.AdminPass, "/dav/to-davfs.txt", []byte("read through davfs2"))
		mnt = mountDavfs(t, e, ca)
		e.speaks("1.1", func() {
			b, err := os.ReadFile(filepath.Join(mnt, "to-davfs.txt"))
			if err != nil || string(b) != "read through davfs2" {
				t.Errorf("read through davfs2: %q, %v", b, err)
			}
		})
		unmountDavfs(t, mnt)

		// Trusting another CA, davfs2 refuses the daemon's certificate.
		if _, out, err := tryMountDavfs(t, e, testutil.NewTestCA(t)); err == nil || !strings.Contains(string(out), "certificate verification failed") {
			t.Errorf("mount.davfs trusting another CA: %v, %s; want the certificate refused", err, out)
		}
	})

	t.Run("cadaver", func(t *testing.T) {
		cadaver := testutil.RequireTool(t, "cadaver")
		e.put("admin", e.d.AdminPass, "/dav/cadaver.txt", []byte("over TLS"))
		dst := filepath.Join(t.TempDir(), "got.txt")
		e.speaks("1.1", func() {
			out := runCadaver(t, cadaver, e, "get cadaver.txt "+dst+"\nquit\n")
			if b, err := os.ReadFile(dst); err != nil || string(b) != "over TLS" {
				t.Errorf("cadaver get: %q, %v\n%s", b, err, out)
			}
		})
	})
}

// mountDavfs mounts the daemon's /dav/ with mount.davfs, trusting the
// test's CA through trust_ca_cert (davfs2 then ignores the system's CAs),
// the credentials in its secrets file.
func mountDavfs(t *testing.T, e *env, ca *testutil.TestCA) string {
	t.Helper()
	mnt, out, err := tryMountDavfs(t, e, ca)
	if err != nil {
		t.Fatalf("mount.davfs %s: %v\n%s\n--- daemon log tail:\n%s", e.d.URL, err, out, tail(e.d.Logs(), 2000))
	}
	return mnt
}

func tryMountDavfs(t *testing.T, e *env, ca *testutil.TestCA) (string, []byte, error) {
	t.Helper()
	bin := testutil.RequireTool(t, "mount.davfs")
	if os.Geteuid() != 0 {
		if testutil.InCI() {
			t.Fatal("mount.davfs needs root here, and CI runs as root")
		}
		t.Skip("mount.davfs needs root")
	}
	// Outside t.TempDir, whose parent only root may enter: davfs2 reads
	// the CA file as its own user.
	dir, err := os.MkdirTemp("", "netdisk-davfs2-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	cache := filepath.Join(dir, "cache")
	// As davfs2's own cache directory is: root's, writable by its group.
	os.Mkdir(cache, 0o775)
	os.Chmod(cache, 0o775)
	if g, err := user.LookupGroup("davfs2"); err == nil {
		gid, _ := strconv.Atoi(g.Gid)
		os.Chown(cache, 0, gid)
	}
	caFile := filepath.Join(dir, "ca.pem")
	b, _ := os.ReadFile(ca.CAFile)
	os.WriteFile(caFile, b, 0o644)
	mnt := filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o755)
	url := e.d.URL + "/dav/"
	secrets := filepath.Join(dir, "secrets")
	os.WriteFile(secrets, fmt.Appendf(nil, "%s admin %s\n", url, e.d.AdminPass), 0o600)
	conf := filepath.Join(dir, "davfs2.conf")
	os.WriteFile(conf, fmt.Appendf(nil, "trust_ca_cert %s\nsecrets %s\ncache_dir %s\nask_auth 0\nuse_locks 0\ndelay_upload 0\n",
		caFile, secrets, cache), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, url, mnt, "-o", "conf="+conf)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() { // before the removal of dir, registered first
		if mounted(mnt) {
			exec.Command("umount", "-l", mnt).Run()
		}
	})
	return mnt, out, err
}

// unmountDavfs unmounts mnt; umount waits for davfs2 to upload what is
// still in its cache.
func unmountDavfs(t *testing.T, mnt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "umount", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount %s: %v\n%s", mnt, err, out)
	}
}

// mounted reports whether mnt is a mount point now.
func mounted(mnt string) bool {
	b, _ := os.ReadFile("/proc/self/mounts")
	return bytes.Contains(b, []byte(" "+mnt+" "))
}

// runCadaver runs cadaver's commands against the daemon's /dav/, the
// credentials in a .netrc. cadaver (neon over GnuTLS) trusts the system's
// CAs only and asks, on a terminal, whether to accept any other
// certificate: script(1) gives it one, and the test checks what it was
// shown before answering yes.
func runCadaver(t *testing.T, bin string, e *env, commands string) string {
	t.Helper()
	script := testutil.RequireTool(t, "script")
	home := t.TempDir()
	host := strings.Split(strings.TrimPrefix(e.d.URL, "https://"), ":")[0]
	os.WriteFile(filepath.Join(home, ".netrc"), fmt.Appendf(nil, "machine %s login admin password %s\n", host, e.d.AdminPass), 0o600)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, script, "-qec", bin+" -t "+e.d.URL+"/dav/", "/dev/null")
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Stdin = strings.NewReader("y\n" + commands)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cadaver: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Issued by: netdisk test CA") {
		t.Errorf("cadaver was not shown the test CA's certificate:\n%s", out)
	}
	return string(out)
}
