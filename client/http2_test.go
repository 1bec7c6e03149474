package client

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"netdisk/testutil"
)

// TestHTTP2FrameSize: over HTTPS the client speaks HTTP/2 and asks the
// server for frames of up to 1 MiB (its opening SETTINGS), not HTTP/2's
// default 16 KiB, so a download's frames take a sixteenth of the server's
// framing rounds. The server here is a bare TLS listener that reads what
// the client opens with.
func TestHTTP2FrameSize(t *testing.T) {
	ca := testutil.NewTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	ca.Issue(t, certFile, keyFile)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := New("https://"+ln.Addr().String(), "u", "p")
	c.SetTLS(&tls.Config{RootCAs: ca.Pool})
	go func() {
		// Never answered: the request ends with the test's context.
		req, _ := http.NewRequestWithContext(ctx, "GET", c.Server+"/api/v1/info", nil)
		if resp, err := c.HTTP.Do(req); err == nil {
			resp.Body.Close()
		}
	}()

	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if err := conn.(*tls.Conn).Handshake(); err != nil {
		t.Fatal(err)
	}
	if p := conn.(*tls.Conn).ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("ALPN: %q, want h2", p)
	}
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(conn, preface); err != nil || string(preface) != http2.ClientPreface {
		t.Fatalf("client preface %q, %v", preface, err)
	}
	f, err := http2.NewFramer(io.Discard, conn).ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %v, want SETTINGS", f)
	}
	if v, ok := sf.Value(http2.SettingMaxFrameSize); !ok || v != 1<<20 {
		t.Errorf("SETTINGS_MAX_FRAME_SIZE %d (sent %v), want %d", v, ok, 1<<20)
	}
}
