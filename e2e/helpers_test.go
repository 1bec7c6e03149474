// Package e2e tests the real netdisk binary from the outside: a daemon on a
// loopback port with a temp data dir, spoken to over HTTP (net/http, raw
// sockets) and by real clients (rclone). Nothing here imports the server's
// handlers; what a user can observe is what is asserted.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

// env is one running daemon and a client for it.
type env struct {
	t *testing.T
	d *testutil.Daemon
	c *http.Client
}

func start(t *testing.T, flags ...string) *env {
	t.Helper()
	d := testutil.StartDaemon(t, flags...)
	tr := &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &env{t: t, d: d, c: &http.Client{Transport: tr}}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// addUser creates a user through the admin API, as `netdisk admin user add` does.
func (e *env) addUser(name, pass string) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "password": pass, "quota": 0})
	st, msg, _ := e.call("POST", "/api/v1/admin/users", "admin", e.d.AdminPass, body,
		map[string]string{"Content-Type": "application/json"})
	if st/100 != 2 {
		e.t.Fatalf("create user %s: %d %s", name, st, msg)
	}
}

// admin calls an admin endpoint, requires 200 and decodes the answer into out.
func (e *env) admin(method, path string, out any) {
	e.t.Helper()
	st, body, _ := e.call(method, path, "admin", e.d.AdminPass, nil, nil)
	if st != http.StatusOK {
		e.t.Fatalf("%s %s: %d %s", method, path, st, body)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, body)
		}
	}
}

// do sends one request and fails the test on a transport error.
func (e *env) do(method, path, user, pass string, body io.Reader, hdr map[string]string) *http.Response {
	e.t.Helper()
	resp, err := e.try(method, path, user, pass, body, hdr)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

func (e *env) try(method, path, user, pass string, body io.Reader, hdr map[string]string) (*http.Response, error) {
	req, err := e.d.Request(ctxFor(e.t), method, path, user, pass, body, hdr)
	if err != nil {
		return nil, err
	}
	return e.c.Do(req)
}

// call sends a request and returns the status and the whole body.
func (e *env) call(method, path, user, pass string, body []byte, hdr map[string]string) (int, []byte, http.Header) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	resp := e.do(method, path, user, pass, rd, hdr)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return resp.StatusCode, b, resp.Header
}

// put uploads body and requires 201 or 204.
func (e *env) put(user, pass, path string, body []byte) {
	e.t.Helper()
	st, msg, _ := e.call("PUT", path, user, pass, body, nil)
	if st != http.StatusCreated && st != http.StatusNoContent {
		e.t.Fatalf("PUT %s as %s: %d %s", path, user, st, msg)
	}
}

// mkcol creates a collection and requires 201.
func (e *env) mkcol(user, pass, path string) {
	e.t.Helper()
	if st, msg, _ := e.call("MKCOL", path, user, pass, nil, nil); st != http.StatusCreated {
		e.t.Fatalf("MKCOL %s as %s: %d %s", path, user, st, msg)
	}
}

// mustGet downloads path and requires 200 and exactly want.
func (e *env) mustGet(user, pass, path string, want []byte) {
	e.t.Helper()
	st, got, _ := e.call("GET", path, user, pass, nil, nil)
	if st != http.StatusOK {
		e.t.Fatalf("GET %s as %s: %d %.200s", path, user, st, got)
	}
	if !bytes.Equal(got, want) {
		e.t.Fatalf("GET %s as %s: %d bytes differ from the %d uploaded", path, user, len(got), len(want))
	}
}

// status returns just the status of a request.
func (e *env) status(method, path, user, pass string, hdr map[string]string) int {
	e.t.Helper()
	st, _, _ := e.call(method, path, user, pass, nil, hdr)
	return st
}

// chunkStoreBytes sums the sizes of the stored chunks (DATA/chunks, without
// its tmp/ staging directory).
func chunkStoreBytes(t testing.TB, dataDir string) (total int64, files int) {
	t.Helper()
	root := filepath.Join(dataDir, "chunks")
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if de.IsDir() {
			if p == filepath.Join(root, "tmp") {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := de.Info()
		if err != nil {
			return err
		}
		total += info.Size()
		files++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return total, files
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// propfindNames returns the hrefs a Depth 1 PROPFIND lists (status 207 required).
func (e *env) propfindNames(user, pass, path string) []string {
	e.t.Helper()
	st, body, _ := e.call("PROPFIND", path, user, pass, nil, map[string]string{"Depth": "1"})
	if st != http.StatusMultiStatus {
		e.t.Fatalf("PROPFIND %s as %s: %d %.300s", path, user, st, body)
	}
	var ms struct {
		Responses []struct {
			Href string `xml:"href"`
		} `xml:"response"`
	}
	if err := xml.Unmarshal(body, &ms); err != nil {
		e.t.Fatalf("PROPFIND %s: %v\n%s", path, err, body)
	}
	var out []string
	for _, r := range ms.Responses {
		out = append(out, strings.TrimSuffix(r.Href, "/"))
	}
	return out
}
