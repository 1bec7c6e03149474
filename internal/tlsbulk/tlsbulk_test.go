package tlsbulk

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"netdisk/testutil"
)

// content is the deterministic body of n bytes the test server sends.
func content(n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{7}), n)
}

func sum(r io.Reader) string {
	h := sha256.New()
	io.Copy(h, r)
	return hex.EncodeToString(h.Sum(nil))
}

// oddReader returns reads of sizes that fall across records and batches.
type oddReader struct {
	r io.Reader
	i int
}

var oddSizes = []int{1, maxPlain - 1, maxPlain + 1, 100_003, batchPlain, 7}

func (o *oddReader) Read(p []byte) (int, error) {
	n := oddSizes[o.i%len(oddSizes)]
	o.i++
	return io.ReadFull(o.r, p[:min(n, len(p))])
}

// server is an HTTPS server on a Listener: /body?n=N&via=readfrom|write&w=W
// answers N bytes of content, through net/http's ReadFrom (which reaches
// Conn.ReadFrom on HTTP/1.1) or through writes of W bytes; /who says how the
// request arrived. conns keeps each connection net/http was handed.
type server struct {
	url    string
	caFile string
	ca     *testutil.TestCA
	ln     *Listener
	hs     *http.Server
	mu     sync.Mutex
	conns  []net.Conn
}

func startServer(t *testing.T, mod func(*tls.Config), opts ...func(*Listener)) *server {
	t.Helper()
	ca := testutil.NewTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	ca.Issue(t, certFile, keyFile)
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2", "http/1.1"}}
	if mod != nil {
		mod(cfg)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{caFile: ca.CAFile, ca: ca, url: "https://" + inner.Addr().String()}
	s.ln = NewListener(inner, cfg)
	for _, o := range opts {
		o(s.ln)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/body", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.ParseInt(r.FormValue("n"), 10, 64)
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		w.Header().Set("Content-Type", "application/octet-stream")
		src := content(n)
		if r.FormValue("via") == "readfrom" {
			// Reads of odd sizes, so records straddle reads.
			io.Copy(w, &oddReader{r: src})
			return
		}
		bs, _ := strconv.Atoi(r.FormValue("w"))
		io.CopyBuffer(struct{ io.Writer }{w}, src, make([]byte, bs))
	})
	mux.HandleFunc("/who", func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			http.Error(w, "no TLS state", http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%s %s %s", r.Proto, tls.VersionName(r.TLS.Version), tls.CipherSuiteName(r.TLS.CipherSuite))
	})
	hs := &http.Server{Handler: mux, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
		s.mu.Lock()
		s.conns = append(s.conns, c)
		s.mu.Unlock()
		return ctx
	}}
	s.hs = hs
	done := make(chan error, 1)
	go func() { done <- hs.Serve(s.ln) }()
	t.Cleanup(func() {
		hs.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return s
}

// sealed reports how many of the connections net/http was handed had
// their records sealed here, and how many were HTTP/1.1 ones (*Conn).
func (s *server) sealed() (sealed, http1 int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		if _, ok := c.(*Conn); ok {
			http1++
		}
		if Sealed(c) {
			sealed++
		}
	}
	return sealed, http1
}

func goClient(s *server, h2 bool, maxVersion uint16) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.ca.Pool, MaxVersion: maxVersion}}
	if h2 {
		tr.ForceAttemptHTTP2 = true
	} else {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	return &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, url string) ([]byte, *http.Response) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, b)
	}
	return b, resp
}

// sizes cross every boundary of a record (16 KiB) and of a batch (256 KiB).
var sizes = []int64{0, 1, 511, 512, 513, maxPlain - 1, maxPlain, maxPlain + 1, batchPlain - 1, batchPlain, batchPlain + 1, 3*batchPlain + 12345}

// TestGoClientReadsEverySize: Go's TLS client (crypto/tls checks every
// record's tag and sequence) reads answers of every size across record and
// batch boundaries, sent through ReadFrom and through writes of several
// sizes: TLS 1.3 over HTTP/1.1 (sealed here), over HTTP/2 and TLS 1.2
// (crypto/tls sends).
func TestGoClientReadsEverySize(t *testing.T) {
	for _, tc := range []struct {
		name       string
		h2         bool
		maxVersion uint16
		sealed     bool
	}{
		{"TLS1.3/HTTP1.1", false, 0, true},
		{"TLS1.3/HTTP2", true, 0, false},
		{"TLS1.2/HTTP1.1", false, tls.VersionTLS12, false},
		{"TLS1.2/HTTP2", true, tls.VersionTLS12, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, nil)
			c := goClient(s, tc.h2, tc.maxVersion)
			b, resp := get(t, c, s.url+"/who")
			if want := map[bool]int{false: 1, true: 2}[tc.h2]; resp.ProtoMajor != want {
				t.Fatalf("answered over %s, want HTTP/%d", resp.Proto, want)
			}
			t.Logf("/who: %s", b)
			for _, n := range sizes {
				for _, via := range []string{"readfrom", "write&w=1000", "write&w=16384", "write&w=300000"} {
					b, _ := get(t, c, fmt.Sprintf("%s/body?n=%d&via=%s", s.url, n, via))
					if got, want := sum(bytes.NewReader(b)), sum(content(n)); got != want {
						t.Fatalf("n=%d via %s: got %d bytes hashing %s, want %s", n, via, len(b), got, want)
					}
				}
			}
			sealed, http1 := s.sealed()
			if want := map[bool]int{false: http1}[!tc.sealed]; sealed != want || tc.h2 == (http1 > 0) {
				t.Fatalf("%d connections sealed here, %d HTTP/1.1 ones; want every HTTP/1.1 one sealed: %v", sealed, http1, tc.sealed)
			}
		})
	}
}

// TestCurlEverySuite: curl (OpenSSL) reads a large answer sealed under each
// TLS 1.3 suite, over HTTP/1.1 and HTTP/2.
func TestCurlEverySuite(t *testing.T) {
	curl := testutil.RequireTool(t, "curl")
	s := startServer(t, nil)
	const n = 5*batchPlain + 777
	want := sum(content(n))
	for _, suite := range []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"} {
		for _, proto := range []string{"--http1.1", "--http2"} {
			out, err := exec.Command(curl, "-sS", "--fail", proto, "--tlsv1.3", "--tls13-ciphers", suite, "--cacert", s.caFile,
				"-w", "\n%{http_version}", fmt.Sprintf("%s/body?n=%d&via=readfrom", s.url, n)).Output()
			if err != nil {
				t.Fatalf("curl %s %s: %v", suite, proto, err)
			}
			i := bytes.LastIndexByte(out, '\n')
			body, version := out[:i], string(out[i+1:])
			if got := sum(bytes.NewReader(body)); got != want {
				t.Fatalf("curl %s %s: %d bytes hashing %s, want %s", suite, proto, len(body), got, want)
			}
			if wantV := map[string]string{"--http1.1": "1.1", "--http2": "2"}[proto]; version != wantV {
				t.Fatalf("curl %s %s: HTTP/%s", suite, proto, version)
			}
			who, err := exec.Command(curl, "-sS", "--fail", proto, "--tlsv1.3", "--tls13-ciphers", suite, "--cacert", s.caFile, s.url+"/who").Output()
			if err != nil || !bytes.Contains(who, []byte(suite)) {
				t.Fatalf("curl %s %s /who: %q, %v", suite, proto, who, err)
			}
		}
	}
	if sealed, http1 := s.sealed(); http1 != 3*2 || sealed != http1 {
		t.Fatalf("%d of %d HTTP/1.1 connections sealed here, want all of 6", sealed, http1)
	}
}

// TestKeyUpdate: past keyUpdateAfter records the sending half moves to the
// next key with a KeyUpdate; Go's client and curl follow it through many
// updates, and the records on the wire hold one KeyUpdate every
// keyUpdateAfter records.
func TestKeyUpdate(t *testing.T) {
	curl := testutil.RequireTool(t, "curl")
	old := keyUpdateAfter
	keyUpdateAfter = 3
	t.Cleanup(func() { keyUpdateAfter = old })
	s := startServer(t, nil)
	const n = 2*batchPlain + 100
	want := sum(content(n))
	for _, via := range []string{"readfrom", "write&w=100000"} {
		b, _ := get(t, goClient(s, false, 0), fmt.Sprintf("%s/body?n=%d&via=%s", s.url, n, via))
		if got := sum(bytes.NewReader(b)); got != want {
			t.Fatalf("via %s: hash %s, want %s", via, got, want)
		}
		types, plains := fetchRecords(t, s, fmt.Sprintf("/body?n=%d&via=%s", n, via))
		updates, since := 0, 0
		for i, typ := range types {
			if typ == recordTypeHandshake {
				if !bytes.Equal(plains[i], []byte{handshakeTypeKeyUpdate, 0, 0, 1, 0}) || since != int(keyUpdateAfter) {
					t.Fatalf("via %s: handshake record %x after %d records", via, plains[i], since)
				}
				updates, since = updates+1, 0
				continue
			}
			since++
		}
		// The answer's header and body records, then close_notify.
		if min := (len(types) - updates) / int(keyUpdateAfter+1); updates < min || updates == 0 {
			t.Fatalf("via %s: %d KeyUpdates in %d records", via, updates, len(types))
		}
	}
	out, err := exec.Command(curl, "-sS", "--fail", "--http1.1", "--cacert", s.caFile, fmt.Sprintf("%s/body?n=%d&via=readfrom", s.url, n)).Output()
	if err != nil {
		t.Fatalf("curl: %v", err)
	}
	if got := sum(bytes.NewReader(out)); got != want {
		t.Fatalf("curl: hash %s, want %s", got, want)
	}
}

// TestPeerAskedKeyUpdate: a client's KeyUpdate that asks for one back
// (openssl s_client's K command) is answered with the sending half's own
// KeyUpdate, and the connection serves on under the new keys.
func TestPeerAskedKeyUpdate(t *testing.T) {
	openssl := testutil.RequireTool(t, "openssl")
	s := startServer(t, nil)
	cmd := exec.Command(openssl, "s_client", "-connect", s.url[len("https://"):], "-tls1_3", "-CAfile", s.caFile,
		"-alpn", "http/1.1", "-crlf", "-msg")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out testutil.SyncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	answered := func(n int) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for strings.Count(out.String(), "HTTP/1.1 TLS 1.3 TLS_") < n {
			if time.Now().After(deadline) || strings.Contains(out.String(), "400 Bad Request") {
				t.Fatalf("waiting for answer %d:\n%s", n, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	request := "GET /who HTTP/1.1\nHost: x\n\n"
	io.WriteString(stdin, request)
	answered(1)
	io.WriteString(stdin, "K\n") // a KeyUpdate, update_requested
	// s_client drops what follows a command in the same read.
	waitFor(t, "s_client's KeyUpdate", func() bool { return regexp.MustCompile(`>>> .*KeyUpdate`).MatchString(out.String()) })
	io.WriteString(stdin, request)
	answered(2)
	stdin.Close()
	log := out.String()
	// -msg shows each handshake message: the client's KeyUpdate sent
	// (">>>") and the server's received ("<<<").
	if !regexp.MustCompile(`>>> .*KeyUpdate`).MatchString(log) || !regexp.MustCompile(`<<< .*KeyUpdate`).MatchString(log) {
		t.Fatalf("no KeyUpdate each way:\n%s", log)
	}
	if sealed, http1 := s.sealed(); sealed != 1 || http1 != 1 {
		t.Fatalf("%d of %d HTTP/1.1 connections sealed here", sealed, http1)
	}
}

// TestCryptoTLSCannotWriteAfterHandover: once the sending half is sealed
// here, a write by crypto/tls (which would reuse sequence numbers under the
// same key) fails and puts nothing on the wire, its close_notify too.
func TestCryptoTLSCannotWriteAfterHandover(t *testing.T) {
	s := startServer(t, nil)
	get(t, goClient(s, false, 0), s.url+"/who")
	s.mu.Lock()
	c := s.conns[0].(*Conn)
	s.mu.Unlock()
	if !Sealed(c) {
		t.Fatal("not sealed here")
	}
	if n, err := c.tc.Write([]byte("through crypto/tls")); n != 0 || !errors.Is(err, errHandedOver) {
		t.Fatalf("crypto/tls wrote %d bytes, err %v; want 0 and errHandedOver", n, err)
	}
	if err := c.tc.CloseWrite(); !errors.Is(err, errHandedOver) {
		t.Fatalf("crypto/tls's close_notify: %v, want errHandedOver", err)
	}
}

// recordedConn dials s as an HTTP/1.1 TLS client whose reads are kept, and
// returns it with a function that opens the server's application records
// read so far (their content types and plaintexts): what crypto/tls's
// client accepted and more, since it shows the KeyUpdate and alert records.
func recordedConn(t *testing.T, s *server) (*tls.Conn, func() ([]byte, [][]byte)) {
	t.Helper()
	tcp, err := net.Dial("tcp", s.url[len("https://"):])
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{Conn: tcp}
	keys := &secretCatcher{ticketless: true}
	c := tls.Client(rec, &tls.Config{RootCAs: s.ca.Pool, NextProtos: []string{"http/1.1"}, ServerName: "127.0.0.1", KeyLogWriter: keys})
	t.Cleanup(func() { c.Close() })
	return c, func() ([]byte, [][]byte) {
		return openAppRecords(t, rec.got.Bytes(), c.ConnectionState().CipherSuite, keys.take())
	}
}

// fetchRecords sends a request for path with "Connection: close" and
// returns the server's records opened.
func fetchRecords(t *testing.T, s *server, path string) (types []byte, plains [][]byte) {
	t.Helper()
	c, records := recordedConn(t, s)
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path)
	if _, err := io.ReadAll(c); err != nil {
		t.Fatal(err)
	}
	return records()
}

// recorder keeps what a connection reads.
type recorder struct {
	net.Conn
	got bytes.Buffer
}

func (r *recorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.got.Write(p[:n])
	return n, err
}

// openAppRecords opens the server's application records in stream (what
// the client read) with the server's traffic secret, skipping what comes
// before the first (the handshake, under other keys), and returns each
// record's content type and plaintext.
func openAppRecords(t *testing.T, stream []byte, suite uint16, secret []byte) (types []byte, plains [][]byte) {
	t.Helper()
	s, err := newSealer(suite, secret)
	if err != nil {
		t.Fatal(err)
	}
	for len(stream) >= headerLen {
		n := int(stream[3])<<8 | int(stream[4])
		rec := stream[:headerLen+n]
		stream = stream[headerLen+n:]
		if rec[0] != recordTypeApplicationData {
			continue
		}
		seq := s.seq
		plain, err := s.aead.Open(nil, s.nextNonce(), rec[headerLen:], rec[:headerLen])
		if err != nil {
			if len(types) == 0 {
				s.seq = seq // a handshake record
				continue
			}
			t.Fatalf("record %d does not open: %v", seq, err)
		}
		i := len(plain) - 1
		for i >= 0 && plain[i] == 0 {
			i-- // padding
		}
		types, plains = append(types, plain[i]), append(plains, plain[:i])
		if plain[i] == recordTypeHandshake && len(plain) > 0 && plain[0] == handshakeTypeKeyUpdate {
			if err := s.update(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(stream) != 0 {
		t.Fatalf("%d bytes of a cut record at the end", len(stream))
	}
	return types, plains
}

// TestCloseNotify: the last record of a connection closed by the server
// (net/http's CloseWrite on "Connection: close", or Close) is TLS's
// close_notify alert, the records before it carry the answer in order.
func TestCloseNotify(t *testing.T) {
	s := startServer(t, nil)
	for _, header := range []string{"Connection: close\r\n", ""} {
		c, records := recordedConn(t, s)
		fmt.Fprintf(c, "GET /body?n=40000&via=readfrom HTTP/1.1\r\nHost: x\r\n%s\r\n", header)
		if header == "" {
			// The server closes an idle connection only when it
			// shuts down; read the answer, then close the server.
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			s.hs.Close() // closes the idle connection
		}
		io.ReadAll(c)
		types, plains := records()
		if len(types) < 2 || types[len(types)-1] != recordTypeAlert || !bytes.Equal(plains[len(plains)-1], []byte{1, 0}) {
			t.Fatalf("%q: records of types %v, want the answer then the close_notify alert", header, types)
		}
		var answer []byte
		for i, typ := range types[:len(types)-1] {
			if typ != recordTypeApplicationData {
				t.Fatalf("record %d of type %d", i, typ)
			}
			answer = append(answer, plains[i]...)
		}
		body := answer[bytes.Index(answer, []byte("\r\n\r\n"))+4:]
		if got, want := sum(bytes.NewReader(body)), sum(content(40000)); got != want {
			t.Fatalf("%q: the answer's body opened from the records hashes %s, want %s", header, got, want)
		}
	}
}

// TestPlainHTTPRefused: a plain HTTP request on the TLS port gets net/http's
// 400, as it did before the handshake moved into the listener.
func TestPlainHTTPRefused(t *testing.T) {
	s := startServer(t, nil)
	resp, err := http.Get("http://" + s.url[len("https://"):] + "/who")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(b, []byte("HTTPS")) {
		t.Fatalf("plain HTTP: %s %q", resp.Status, b)
	}
}

// TestHandshakeTimeout: a client that connects and sends nothing is
// disconnected after the handshake's timeout, and others are served while
// it waits.
func TestHandshakeTimeout(t *testing.T) {
	const timeout = 4 * time.Second
	s := startServer(t, nil, func(l *Listener) { l.Timeout = timeout })
	silent, err := net.Dial("tcp", s.url[len("https://"):])
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	waitFor(t, "the silent connection's handshake", func() bool { return s.ln.handshaking.Load() == 1 })
	start := time.Now()
	get(t, goClient(s, false, 0), s.url+"/who")
	// Milliseconds when handshakes run side by side; behind the silent
	// one it would wait out most of the timeout.
	if d := time.Since(start); d >= timeout/2 {
		t.Fatalf("the GET took %v: it waited for the silent handshake (timeout %v)", d, timeout)
	}
	silent.SetReadDeadline(time.Now().Add(10 * timeout))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("silent connection: %v, want EOF (closed by the server)", err)
	}
	if d := time.Since(start); d > 5*timeout {
		t.Fatalf("closed after %v", d)
	}
}

// waitFor polls cond until it holds (10 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s", what)
		}
	}
}

// TestCloseEndsHandshakes: closing the listener cuts a handshake under way
// short (its timeout is a minute) and returns once its goroutines are gone.
func TestCloseEndsHandshakes(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(inner, &tls.Config{})
	l.Timeout = time.Minute
	accepted := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		accepted <- err
	}()
	silent, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	silent.Write([]byte{22, 3, 1}) // the start of a ClientHello, then nothing
	waitFor(t, "the handshake to start", func() bool { return l.handshaking.Load() == 1 })
	start := time.Now()
	l.Close()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Close took %v", d)
	}
	if n := l.handshaking.Load(); n != 0 {
		t.Fatalf("%d handshakes still under way after Close", n)
	}
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Accept after Close: %v", err)
	}
	// Closed: EOF, or a reset if the bytes sent were still unread.
	silent.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("connection in its handshake: %v, want it closed", err)
	}
}
