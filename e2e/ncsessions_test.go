package e2e

import (
	"bytes"
	"crypto/sha1"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	_ "github.com/mattn/go-sqlite3"

	"netdisk/apitype"
	"netdisk/testutil"
)

// A chunked upload's MKCOL reserves the total it announces, as an upload
// session does: another upload, or a PUT, that cannot fit beside it is
// refused while it is open, and its DELETE gives the space back.
func TestNextcloudUploadReservesAtMKCOL(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.setQuota("alice", 20<<20)
	total := func(n int) map[string]string {
		return map[string]string{"OC-Total-Length": strconv.Itoa(n), "Destination": e.d.URL + "/remote.php/dav/files/alice/f.bin"}
	}
	if st := e.status("MKCOL", "/remote.php/dav/uploads/alice/1", "alice", "alice-pw", total(12<<20)); st != http.StatusCreated {
		t.Fatalf("MKCOL of a 12 MiB upload: %d", st)
	}
	if st := e.status("MKCOL", "/remote.php/dav/uploads/alice/2", "alice", "alice-pw", total(12<<20)); st != http.StatusInsufficientStorage {
		t.Fatalf("MKCOL of a second 12 MiB upload beside the first (20 MiB quota): %d, want 507", st)
	}
	if st, _, _ := e.call("PUT", "/dav/other.bin", "alice", "alice-pw", make([]byte, 10<<20), nil); st != http.StatusInsufficientStorage {
		t.Fatalf("PUT of 10 MiB beside the 12 MiB upload: %d, want 507", st)
	}
	if st := e.status("MKCOL", "/remote.php/dav/uploads/alice/1", "alice", "alice-pw", total(12<<20)); st/100 == 2 {
		t.Fatalf("MKCOL of an upload that exists: %d", st)
	}
	if st := e.status("DELETE", "/remote.php/dav/uploads/alice/1", "alice", "alice-pw", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE of the upload: %d", st)
	}
	if st := e.status("MKCOL", "/remote.php/dav/uploads/alice/2", "alice", "alice-pw", total(12<<20)); st != http.StatusCreated {
		t.Fatalf("MKCOL of 12 MiB once the first upload is deleted: %d", st)
	}
}

// Two nodes behind one address (any node may get any request): an upload
// begun on one is listed, continued and assembled on the other, because
// its parts live in the shared stores, not on a node's disk.
func TestNextcloudUploadAcrossNodes(t *testing.T) {
	c := startCluster(t) // chunks of 64 KiB
	data := testutil.RandBytes(300_000)
	sum := sha1.Sum(data)
	up := "/remote.php/dav/uploads/admin/99"
	hdr := func(d *testutil.Daemon) map[string]string {
		return map[string]string{"OC-Total-Length": strconv.Itoa(len(data)), "Destination": d.URL + "/remote.php/dav/files/admin/big.bin"}
	}
	if a := ask(t, c.a, "MKCOL", up, nil, hdr(c.a)); a.code != http.StatusCreated {
		t.Fatalf("MKCOL on a: %d %s", a.code, a.body)
	}
	// Parts of 100,000 bytes: every one straddles a chunk boundary.
	for i, d := range []*testutil.Daemon{c.a, c.b, c.a} {
		name := strconv.Itoa(i * 100_000)
		if a := ask(t, d, "PUT", up+"/"+name, data[i*100_000:(i+1)*100_000], hdr(d)); a.code != http.StatusCreated {
			t.Fatalf("PUT part %s: %d %s", name, a.code, a.body)
		}
	}
	a := ask(t, c.b, "PROPFIND", up, nil, map[string]string{"Depth": "1"})
	if a.code != http.StatusMultiStatus || bytes.Count(a.body, []byte("<D:getcontentlength>100000</D:getcontentlength>")) != 3 {
		t.Fatalf("PROPFIND of the upload on b: %d %s", a.code, a.body)
	}
	move := hdr(c.b)
	move["OC-Checksum"] = "SHA1:" + hex.EncodeToString(sum[:])
	if a := ask(t, c.b, "MOVE", up+"/.file", nil, move); a.code != http.StatusCreated {
		t.Fatalf("MOVE .file on b: %d %s", a.code, a.body)
	}
	for _, d := range []*testutil.Daemon{c.a, c.b} {
		if a := ask(t, d, "GET", "/dav/big.bin", nil, nil); a.code != http.StatusOK || !bytes.Equal(a.body, data) {
			t.Fatalf("GET on %s: %d, %d bytes", d.URL, a.code, len(a.body))
		}
	}
	if a := ask(t, c.a, "PROPFIND", up, nil, map[string]string{"Depth": "1"}); a.code != http.StatusNotFound {
		t.Fatalf("the upload after its assembly, on a: %d", a.code)
	}
}

// A user near the quota syncs a folder with nextcloudcmd: the client says
// the storage is insufficient, every file on the server is whole or absent
// (nothing half-written, no upload left open, nothing reserved), and the
// sync after the quota is raised completes.
func TestNextcloudcmdQuotaFull(t *testing.T) {
	bin := testutil.RequireTool(t, "nextcloudcmd")
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.setQuota("alice", 30<<20)
	// Three files the client cuts into parts (over its 10 MB chunk size),
	// each fitting the free quota alone, not all three together.
	tree := map[string][]byte{}
	for _, name := range []string{"a.bin", "b.bin", "c.bin"} {
		tree[name] = testutil.RandBytes(12 << 20)
	}
	dir := filepath.Join(t.TempDir(), "q")
	writeTree(t, dir, tree)
	home := filepath.Join(filepath.Dir(dir), ".home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	run := func() ([]byte, error) {
		cmd := exec.CommandContext(ctxFor(t), bin, "--non-interactive", "--max-sync-retries", "1",
			"-u", "alice", "-p", "alice-pw", dir, e.d.URL)
		cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_DATA_HOME="+home)
		return cmd.CombinedOutput()
	}
	_, before := e.traffic()
	out, err := run()
	_, after := e.traffic()
	if err == nil && !quotaMessage.Match(out) {
		t.Fatalf("nextcloudcmd over the quota neither failed nor said why:\n%s", lastBytes(out, 3000))
	}
	if !quotaMessage.Match(out) {
		t.Fatalf("nextcloudcmd's output does not name the quota:\n%s", lastBytes(out, 3000))
	}
	t.Logf("nextcloudcmd over the quota: %v; %s", err, quotaMessage.Find(out))
	whole := 0
	for name, want := range tree {
		st, b, _ := e.call("GET", "/dav/"+name, "alice", "alice-pw", nil, nil)
		switch {
		case st == http.StatusOK && bytes.Equal(b, want):
			whole++
		case st != http.StatusNotFound:
			t.Fatalf("%s on the server after the refused sync: %d, %d bytes", name, st, len(b))
		}
	}
	if whole == len(tree) {
		t.Fatalf("every file went up past a 30 MiB quota")
	}
	// Refused when the upload was opened, before its parts were sent.
	if sent := after - before; sent > int64(whole)*(12<<20)+(1<<20) {
		t.Fatalf("the sync moved %d bytes for %d whole files of 12 MiB: a refused file's bytes were sent", sent, whole)
	}
	if n := e.arrivedParts("alice", "alice-pw"); n != 0 {
		t.Fatalf("%d bytes of parts left in open uploads", n)
	}
	var q apitype.Quota
	if st, b, _ := e.call("GET", "/api/v1/quota", "alice", "alice-pw", nil, nil); st != http.StatusOK || json.Unmarshal(b, &q) != nil {
		t.Fatalf("GET /api/v1/quota: %d %s", st, b)
	}
	if q.Uploading != 0 || q.Unfinished != 0 || q.Finished != int64(whole)*12<<20 {
		t.Fatalf("quota after the refused sync (%d whole files): %+v", whole, q)
	}

	e.setQuota("alice", 100<<20)
	clearClientBackoff(t, dir)
	if out, err := run(); err != nil {
		t.Fatalf("nextcloudcmd after the quota was raised: %v\n%s", err, lastBytes(out, 3000))
	}
	for name, want := range tree {
		e.mustGet("alice", "alice-pw", "/dav/"+name, want)
	}
}

// clearClientBackoff forgets the files nextcloudcmd postponed after an
// error (its journal's blacklist, retried after a back-off on its own
// clock): the next run tries them at once, as it would after the wait.
func clearClientBackoff(t *testing.T, dir string) {
	t.Helper()
	dbs, err := filepath.Glob(filepath.Join(dir, ".sync_*.db"))
	if err != nil || len(dbs) != 1 {
		t.Fatalf("the client's journal in %s: %v %v", dir, dbs, err)
	}
	db, err := sql.Open("sqlite3", dbs[0])
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM blacklist`); err != nil {
		t.Fatal(err)
	}
}

var quotaMessage = regexp.MustCompile(`507 Insufficient Storage`)

// Login Flow v2 across two nodes: started through one, granted through the
// other (signed in there), collected through the first; the app password
// signs in on both, and the flow is collected once.
func TestLoginFlowAcrossNodes(t *testing.T) {
	c := startCluster(t)
	raw := func(d *testutil.Daemon, method, path string, body []byte, hdr map[string]string) (int, []byte, http.Header) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctxFor(t), method, d.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, resp.Header
	}
	st, b, _ := raw(c.a, "POST", "/index.php/login/v2", nil, map[string]string{"User-Agent": "test-desktop"})
	var start struct {
		Poll  struct{ Token, Endpoint string }
		Login string
	}
	if st != http.StatusOK || json.Unmarshal(b, &start) != nil || start.Poll.Token == "" {
		t.Fatalf("start on a: %d %s", st, b)
	}
	login := start.Login[strings.LastIndex(start.Login, "/")+1:]

	// Signed in to the page of b.
	st, b, hd := raw(c.b, "POST", "/web/login", []byte(`{"name":"admin","password":"`+c.b.AdminPass+`"}`),
		map[string]string{"Content-Type": "application/json", "Origin": c.b.URL})
	var sess struct{ CSRF string }
	if st != http.StatusOK || json.Unmarshal(b, &sess) != nil {
		t.Fatalf("sign-in on b: %d %s", st, b)
	}
	cookie := strings.Split(hd.Get("Set-Cookie"), ";")[0]
	auth := map[string]string{"Cookie": cookie, "X-CSRF-Token": sess.CSRF, "Origin": c.b.URL}
	if st, b, _ := raw(c.b, "GET", "/web/loginflow/"+login, nil, auth); st != http.StatusOK || !bytes.Contains(b, []byte("test-desktop")) {
		t.Fatalf("the flow on b: %d %s", st, b)
	}
	poll := func(d *testutil.Daemon) (int, []byte) {
		st, b, _ := raw(d, "POST", "/index.php/login/v2/poll", []byte("token="+start.Poll.Token),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		return st, b
	}
	if st, b := poll(c.b); st != http.StatusNotFound {
		t.Fatalf("poll on b before the grant: %d %s", st, b)
	}
	if st, b, _ := raw(c.b, "POST", "/web/loginflow/"+login+"/grant", nil, auth); st != http.StatusNoContent {
		t.Fatalf("grant on b: %d %s", st, b)
	}
	st, b = poll(c.a)
	var res struct{ Server, LoginName, AppPassword string }
	if st != http.StatusOK || json.Unmarshal(b, &res) != nil || res.LoginName != "admin" || res.AppPassword == "" {
		t.Fatalf("poll on a after the grant: %d %s", st, b)
	}
	if st, _ := poll(c.b); st != http.StatusNotFound {
		t.Fatalf("a second poll on b: %d", st)
	}
	for _, d := range []*testutil.Daemon{c.a, c.b} {
		resp, err := d.Do(ctxFor(t), "PROPFIND", "/remote.php/dav/files/admin/", "admin", res.AppPassword, nil, map[string]string{"Depth": "0"})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMultiStatus {
			t.Fatalf("PROPFIND on %s with the app password: %d", d.URL, resp.StatusCode)
		}
	}
}

// nextcloudcmd syncs up and down through a proxy that sends each request
// to the other of two nodes: a file large enough for chunked upload has its
// MKCOL, parts and MOVE spread over both.
func TestNextcloudcmdAcrossNodes(t *testing.T) {
	testutil.RequireTool(t, "nextcloudcmd")
	c := startCluster(t)
	var turn atomic.Int64
	perNode := [2]atomic.Int64{}
	targets := []*url.URL{mustURL(t, c.a.URL), mustURL(t, c.b.URL)}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			i := turn.Add(1) % 2
			perNode[i].Add(1)
			r.SetURL(targets[i])
			r.Out.Host = r.In.Host // the nodes see the address the client used (Destination, poll URLs)
		},
		FlushInterval: -1, // stream PROPFIND answers as they come
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: rp}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	proxy := "http://" + ln.Addr().String()

	tree := map[string][]byte{"big.bin": testutil.RandBytes(25 << 20)}
	for i := range 20 {
		tree[fmt.Sprintf("docs/n%02d.txt", i)] = testutil.RandBytes(i * 997)
	}
	up := filepath.Join(t.TempDir(), "up")
	writeTree(t, up, tree)
	syncClient(t, "nextcloudcmd", up, proxy, "admin", c.a.AdminPass)
	for _, d := range []*testutil.Daemon{c.a, c.b} {
		if a := ask(t, d, "GET", "/dav/big.bin", nil, nil); a.code != http.StatusOK || !bytes.Equal(a.body, tree["big.bin"]) {
			t.Fatalf("big.bin on %s: %d, %d bytes", d.URL, a.code, len(a.body))
		}
	}
	down := filepath.Join(t.TempDir(), "down")
	if err := os.MkdirAll(down, 0o700); err != nil {
		t.Fatal(err)
	}
	syncClient(t, "nextcloudcmd", down, proxy, "admin", c.a.AdminPass)
	got := localTree(t, down)
	if len(got) != len(tree) {
		t.Fatalf("synced down %d files, want %d", len(got), len(tree))
	}
	for name, want := range tree {
		if !bytes.Equal(got[name], want) {
			t.Fatalf("%s differs after the sync down", name)
		}
	}
	if perNode[0].Load() == 0 || perNode[1].Load() == 0 {
		t.Fatalf("requests per node: %d, %d", perNode[0].Load(), perNode[1].Load())
	}
	t.Logf("requests per node: %d, %d", perNode[0].Load(), perNode[1].Load())
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
