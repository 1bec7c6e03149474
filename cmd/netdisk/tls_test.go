package main

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"netdisk/internal/tlsconf"
	"netdisk/testutil"
	"netdisk/web"
)

// tlsDaemon starts a daemon serving HTTPS with a certificate of a CA made
// by the test, in files the test may replace.
func tlsDaemon(t *testing.T, extra ...string) (*testutil.Daemon, *testutil.TestCA, string, string, string) {
	t.Helper()
	ca := testutil.NewTestCA(t)
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	fp := ca.Issue(t, cert, key)
	d := testutil.StartDaemon(t, append([]string{"--tls-cert", cert, "--tls-key", key}, extra...)...)
	return d, ca, cert, key, fp
}

// peerFingerprint makes a new TLS connection to d and returns the SHA-256
// of the certificate it was served.
func peerFingerprint(t *testing.T, d *testutil.Daemon, ca *testutil.TestCA) string {
	t.Helper()
	c, err := tls.Dial("tcp", d.Addr, &tls.Config{RootCAs: ca.Pool})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return tlsconf.Fingerprint(c.ConnectionState().PeerCertificates[0].Raw)
}

// TestServeTLS: --tls-cert/--tls-key serve HTTPS with HTTP/2 by ALPN (curl
// says 2), plain HTTP on that port is refused, web answers carry HSTS, and
// the session cookie is Secure even when the client claims
// X-Forwarded-Proto: http.
func TestServeTLS(t *testing.T) {
	curl := testutil.RequireTool(t, "curl")
	d, ca, _, _, _ := tlsDaemon(t)
	if !strings.HasPrefix(d.URL, "https://") {
		t.Fatalf("daemon URL %s", d.URL)
	}
	out, err := exec.Command(curl, "-sS", "--http2", "--cacert", ca.CAFile, "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
		"-u", "admin:"+d.AdminPass, d.URL+"/api/v1/info").CombinedOutput()
	if err != nil || string(out) != "2 200" {
		t.Fatalf("curl --http2: %q, %v; want \"2 200\"", out, err)
	}

	// Plain HTTP on the TLS port: refused, never served.
	resp, err := http.Get("http://" + d.Addr + "/api/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "HTTP request to an HTTPS server") {
		t.Errorf("plain HTTP on the TLS port: %d %q; want 400", resp.StatusCode, body)
	}

	hc := ca.Client()
	resp, err = hc.Get(d.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("web page over %s, want HTTP/2", resp.Proto)
	}
	if h := resp.Header.Get("Strict-Transport-Security"); !strings.HasPrefix(h, "max-age=") {
		t.Errorf("web page: Strict-Transport-Security %q", h)
	}

	b, _ := json.Marshal(map[string]string{"name": "admin", "password": d.AdminPass})
	req, _ := http.NewRequest("POST", d.URL+"/web/login", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-Proto", "http") // a client's claim, over TLS
	resp, err = hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var found bool
	for _, c := range resp.Cookies() {
		if c.Name == web.CookieName {
			found = true
			if !c.Secure {
				t.Errorf("session cookie over TLS with X-Forwarded-Proto: http is not Secure: %v", c)
			}
		}
	}
	if resp.StatusCode != 200 || !found {
		t.Fatalf("sign-in over TLS: %d, cookie found %v", resp.StatusCode, found)
	}
}

// TestServeTLSReloadOnSIGHUP: the certificate replaced on disk and SIGHUP:
// new connections get the new certificate while a long download on a
// connection made before goes on to its end, whole.
func TestServeTLSReloadOnSIGHUP(t *testing.T) {
	d, ca, cert, key, oldFP := tlsDaemon(t)
	hc := ca.Client()
	data := testutil.RandBytes(32 << 20)
	req, _ := http.NewRequest("PUT", d.URL+"/dav/big.bin", bytes.NewReader(data))
	req.SetBasicAuth("admin", d.AdminPass)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}

	// The download starts on a connection of the old certificate and stays
	// half-read while the certificate changes.
	dl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, ForceAttemptHTTP2: true}}
	req, _ = http.NewRequest("GET", d.URL+"/dav/big.bin", nil)
	req.SetBasicAuth("admin", d.AdminPass)
	resp, err = dl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if got := tlsconf.Fingerprint(resp.TLS.PeerCertificates[0].Raw); got != oldFP {
		t.Fatalf("download served %s, want the first certificate %s", got, oldFP)
	}
	h := md5.New()
	if _, err := io.CopyN(h, resp.Body, 1<<20); err != nil {
		t.Fatal(err)
	}

	newFP := ca.Issue(t, cert, key)
	loads := strings.Count(d.Logs(), "tls: certificate loaded")
	if err := syscall.Kill(d.Pid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitLog(t, d, func(l string) bool { return strings.Count(l, "tls: certificate loaded") > loads })
	if got := peerFingerprint(t, d, ca); got != newFP {
		t.Fatalf("after SIGHUP a new connection got %s, want the new certificate %s", got, newFP)
	}
	if _, err := io.Copy(h, resp.Body); err != nil {
		t.Fatalf("download on the old connection broke: %v", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != testutil.MD5Hex(data) {
		t.Fatalf("download on the old connection: md5 %s, want %s", got, testutil.MD5Hex(data))
	}
}

// waitLog waits (10 s at most) until the daemon's log satisfies ok: the
// daemon says when it acted, so the test waits for that, not for a time.
func waitLog(t *testing.T, d *testutil.Daemon, ok func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(d.Logs()) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon's log never said so:\n%s", d.Logs())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var fingerprintLog = regexp.MustCompile(`tls: self-signed certificate.* sha256=([0-9a-f]{64})`)

// TestServeTLSSelfSigned: --tls-self-signed makes a certificate once into
// the data directory (0600), logs its fingerprint in one line, keeps it
// across restarts, and `admin tls` prints the same fingerprint, which the
// served certificate has.
func TestServeTLSSelfSigned(t *testing.T) {
	d := testutil.StartDaemon(t, "--tls-self-signed")
	m := fingerprintLog.FindStringSubmatch(d.Logs())
	if m == nil {
		t.Fatalf("no fingerprint line in the log:\n%s", d.Logs())
	}
	fp := m[1]
	certFile, keyFile := tlsconf.SelfSignedFiles(d.DataDir)
	for _, f := range []string{certFile, keyFile} {
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", f, fi, err)
		}
	}
	c, err := tls.Dial("tcp", d.Addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := tlsconf.Fingerprint(c.ConnectionState().PeerCertificates[0].Raw); got != fp {
		t.Errorf("served %s, logged %s", got, fp)
	}
	c.Close()
	r := runCLI(t, d, nil, "admin", "tls", "--data", d.DataDir)
	if r.code != 0 || strings.TrimSpace(r.stdout) != fp {
		t.Errorf("admin tls: exit %d, %q %q; want %s", r.code, r.stdout, r.stderr, fp)
	}
	d.Restart()
	m = fingerprintLog.FindStringSubmatch(d.Logs())
	if m == nil || m[1] != fp {
		t.Errorf("after a restart the fingerprint is %v, want %s kept", m, fp)
	}
	// Pinned, a client needs neither a CA nor a matching name.
	r = runCLI(t, d, map[string]string{"NETDISK_TLS_FINGERPRINT": fp}, "ls", "/")
	if r.code != 0 {
		t.Errorf("ls pinned to %s: exit %d, %q", fp, r.code, r.stderr)
	}
}

// TestClientsVerifyTLS: push and ls work over HTTPS with --ca-file (or
// NETDISK_CA_FILE) and with the right --tls-fingerprint; every kind of
// client command refuses a wrong fingerprint, and one without either
// refuses the unknown CA, each in one line naming the fix.
func TestClientsVerifyTLS(t *testing.T) {
	d, ca, _, _, fp := tlsDaemon(t)
	src := filepath.Join(t.TempDir(), "f.bin")
	data := testutil.RandBytes(5 << 20)
	os.WriteFile(src, data, 0o600)

	var r cliResult
	overHTTP2(t, d, ca, func() {
		r = runCLI(t, d, nil, "push", "--ca-file", ca.CAFile, src, "/f.bin")
		if r.code != 0 {
			t.Fatalf("push --ca-file: exit %d, %q", r.code, r.stderr)
		}
	})
	r = runCLI(t, d, map[string]string{"NETDISK_CA_FILE": ca.CAFile}, "ls", "/")
	if r.code != 0 || !strings.Contains(r.stdout, "f.bin") {
		t.Fatalf("ls with NETDISK_CA_FILE: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, d, nil, "ls", "--tls-fingerprint", strings.ToUpper(fp), "/")
	if r.code != 0 || !strings.Contains(r.stdout, "f.bin") {
		t.Fatalf("ls --tls-fingerprint: exit %d, %q %q", r.code, r.stdout, r.stderr)
	}

	wrong := strings.Repeat("ab", 32)
	dst := t.TempDir()
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mnt, 0o700)
	for _, args := range [][]string{
		{"ls", "/"},
		{"push", src, "/g.bin"},
		{"pull", "/f.bin", filepath.Join(dst, "f.bin")},
		{"mkdir", "/d"},
		{"mv", "/f.bin", "/h.bin"},
		{"rm", "/f.bin"},
		{"quota"},
		{"token", "list"},
		{"uploads", "ls"},
		{"async", "status", "x"},
		{"admin", "user", "list"},
		{"admin", "stats"},
		{"agent", "--id", "tls-test", "--dir", dst},
		{"mount", mnt},
	} {
		failCLI(t, d, map[string]string{"NETDISK_TLS_FINGERPRINT": wrong}, 1, "--tls-fingerprint", args...)
		failCLI(t, d, nil, 1, "--ca-file", args...)
	}
	// The TLS port named with http://: refused, with the fix.
	failCLI(t, d, map[string]string{"NETDISK_SERVER": "http://" + d.Addr, "NETDISK_CA_FILE": ca.CAFile}, 1, "use an https:// address", "ls", "/")
	r = runCLI(t, d, map[string]string{"NETDISK_CA_FILE": ca.CAFile}, "ls", "/")
	if !strings.Contains(r.stdout, "f.bin") {
		t.Errorf("a refused command changed the drive: ls %q %q", r.stdout, r.stderr)
	}
}

// TestHTTPRedirectListen: --http-redirect-listen answers plain HTTP with a
// 308 to the same host, path and query over HTTPS.
func TestHTTPRedirectListen(t *testing.T) {
	d, _, _, _, _ := tlsDaemon(t, "--http-redirect-listen", "127.0.0.1:0")
	m := regexp.MustCompile(`--http-redirect-listen\)" addr=(\S+)`).FindStringSubmatch(d.Logs())
	if m == nil {
		t.Fatalf("no redirect address in the log:\n%s", d.Logs())
	}
	nc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "PUT", "http://"+m[1]+"/dav/a%20b/c.txt?x=1&y=2", strings.NewReader("body"))
	req.Host = "drive.example:8080"
	resp, err := nc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, port, _ := strings.Cut(d.Addr, ":")
	want := "https://drive.example:" + port + "/dav/a%20b/c.txt?x=1&y=2"
	if resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
		t.Errorf("redirect: %d to %q, want 308 to %q", resp.StatusCode, resp.Header.Get("Location"), want)
	}
}

// TestMountOverHTTPS: a real FUSE mount of an HTTPS daemon, trusting its CA
// through --ca-file, reads and writes the drive.
func TestMountOverHTTPS(t *testing.T) {
	fusermount := testutil.RequireTool(t, "fusermount3")
	d, ca, _, _, _ := tlsDaemon(t)
	hc := ca.Client()
	davDo := func(method, path string, body []byte) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, d.URL+"/dav"+path, bytes.NewReader(body))
		req.SetBasicAuth("admin", d.AdminPass)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if st, _ := davDo("PUT", "/hello.txt", []byte("hello")); st/100 != 2 {
		t.Fatalf("PUT: %d", st)
	}
	mnt := t.TempDir()
	before := requestsByProtocol(t, d, ca)
	cmd := exec.Command(testutil.Binary(t), "mount", "--ca-file", ca.CAFile, "--cache-dir", t.TempDir(), mnt)
	cmd.Env = cliEnv(map[string]string{"NETDISK_SERVER": d.URL, "NETDISK_USER": "admin", "NETDISK_PASSWORD": d.AdminPass})
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
			t.Fatalf("netdisk mount over HTTPS exited: %s", out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("hello.txt not readable through the mount after 30s: %s", out.String())
		}
	}
	if err := os.WriteFile(filepath.Join(mnt, "from-mount.txt"), []byte("written"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, b := davDo("GET", "/from-mount.txt", nil); st != 200 || string(b) != "written" {
		t.Fatalf("a file written through the HTTPS mount: %d %q", st, b)
	}
	checkHTTP2(t, before, requestsByProtocol(t, d, ca))
}

// requestsByProtocol is the daemon's count of requests by HTTP version.
func requestsByProtocol(t *testing.T, d *testutil.Daemon, ca *testutil.TestCA) map[string]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got, err := d.RequestsByProtocol(ctx, ca.Client())
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// checkHTTP2 fails the test unless the daemon saw requests between the two
// counts and every one came over HTTP/2 (the counts are read over HTTP/2).
func checkHTTP2(t *testing.T, before, after map[string]int) {
	t.Helper()
	if after["1.1"] != before["1.1"] || after["1.0"] != before["1.0"] || after["2"]-before["2"] < 2 {
		t.Errorf("requests by HTTP version before %v, after %v: want every new one over HTTP/2", before, after)
	}
}

// overHTTP2 runs f, a client's work, and fails the test unless every
// request it made reached the daemon over HTTP/2.
func overHTTP2(t *testing.T, d *testutil.Daemon, ca *testutil.TestCA, f func()) {
	t.Helper()
	before := requestsByProtocol(t, d, ca)
	f()
	checkHTTP2(t, before, requestsByProtocol(t, d, ca))
}

// TestServeTLSReloadOnFileChange: without a signal, a certificate renewed
// in place is served to new connections once the daemon's poll sees the
// files changed.
func TestServeTLSReloadOnFileChange(t *testing.T) {
	d, ca, cert, key, _ := tlsDaemon(t, "--tls-poll", "20ms")
	loads := strings.Count(d.Logs(), "tls: certificate loaded")
	newFP := ca.Issue(t, cert, key)
	waitLog(t, d, func(l string) bool { return strings.Count(l, "tls: certificate loaded") > loads })
	if got := peerFingerprint(t, d, ca); got != newFP {
		t.Fatalf("after the renewal a new connection got %s, want %s", got, newFP)
	}
}

// TestServeTLSHTTP2Windows: the HTTPS listener gives an HTTP/2 client
// upload windows of 4 MiB a stream and 8 MiB a connection (the SETTINGS
// and WINDOW_UPDATE it opens with), not Go's 1 MiB, which held a large PUT
// to a window update every 512 KiB.
func TestServeTLSHTTP2Windows(t *testing.T) {
	d, ca, _, _, _ := tlsDaemon(t)
	c, err := tls.Dial("tcp", d.Addr, &tls.Config{RootCAs: ca.Pool, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN: %q, want h2", p)
	}
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(c, c)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var streamWindow, connWindow uint32
	for streamWindow == 0 || connWindow == 0 {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the server's opening frames: %v (stream window %d, connection window %d)", err, streamWindow, connWindow)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			streamWindow = 65535 // HTTP/2's initial window, unless the settings say otherwise
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
				streamWindow = v
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				connWindow = 65535 + f.Increment
			}
		}
	}
	if streamWindow != 4<<20 || connWindow != 8<<20 {
		t.Errorf("upload windows: %d a stream, %d the connection; want %d and %d", streamWindow, connWindow, 4<<20, 8<<20)
	}
}
