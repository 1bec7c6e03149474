package dav

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"netdisk/davlock"
	"netdisk/drive/drivetest"
	"netdisk/meta"
	"netdisk/testutil"
)

// lockEnv is the Handler over the in-process test drive (drivetest: SQLite,
// chunk store on disk, quota guard) with one fake clock for the metadata
// store, the drive and the lock manager, so lock timeouts and folder times
// can be driven. Requests pick their user by the Basic auth name
// (authentication is the server's job).
type lockEnv struct {
	t     *testing.T
	h     *Handler
	clock *testutil.Clock
	url   string
	users map[string]meta.User
}

func startLockEnv(t *testing.T) *lockEnv {
	t.Helper()
	clock := testutil.NewClock(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	env := drivetest.New(t, drivetest.Options{Clock: clock})
	users := map[string]meta.User{}
	for _, name := range []string{"alice", "bob", "carol"} {
		users[name] = env.AddUser(t, name, 0)
	}
	h := NewHandler(env.Drive, "/dav", slog.New(slog.NewTextHandler(io.Discard, nil)))
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, _, _ := r.BasicAuth()
		u, ok := users[name]
		if !ok {
			http.Error(w, "who?", http.StatusUnauthorized)
			return
		}
		h.Serve(w, r, u)
	}))
	t.Cleanup(hs.Close)
	return &lockEnv{t: t, h: h, clock: clock, url: hs.URL, users: users}
}

type resp struct {
	status int
	body   string
	hdr    http.Header
}

// do sends a request as user; hdr values are "Name: value" pairs.
func (e *lockEnv) do(user, method, path, body string, hdr ...string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.SetBasicAuth(user, "x")
	for _, h := range hdr {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, string(b), res.Header}
}

func (e *lockEnv) want(status int, user, method, path, body string, hdr ...string) resp {
	e.t.Helper()
	r := e.do(user, method, path, body, hdr...)
	if r.status != status {
		e.t.Fatalf("%s %s %s %q: %d %.300s, want %d", user, method, path, hdr, r.status, r.body, status)
	}
	return r
}

const (
	lockExclusive = `<?xml version="1.0" encoding="utf-8"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner><D:href>mailto:alice@example.com</D:href></D:owner></D:lockinfo>`
	lockShared    = `<lockinfo xmlns="DAV:"><lockscope><shared/></lockscope><locktype><write/></locktype><owner>alice &amp; co</owner></lockinfo>`
)

// lock takes a lock and returns its token.
func (e *lockEnv) lock(status int, user, path, body string, hdr ...string) string {
	e.t.Helper()
	r := e.want(status, user, "LOCK", path, body, hdr...)
	tok := r.hdr.Get("Lock-Token")
	if len(tok) < 3 || tok[0] != '<' || tok[len(tok)-1] != '>' {
		e.t.Fatalf("LOCK %s: Lock-Token %q", path, tok)
	}
	return tok[1 : len(tok)-1]
}

func TestLockExclusiveFile(t *testing.T) {
	e := startLockEnv(t)
	e.want(201, "alice", "PUT", "/dav/f.txt", "v1")
	r := e.want(200, "alice", "LOCK", "/dav/f.txt", lockExclusive, "Timeout: Second-120", "Depth: 0")
	tok := strings.Trim(r.hdr.Get("Lock-Token"), "<>")
	for _, s := range []string{"<D:lockdiscovery>", "<D:exclusive/>", "<D:depth>0</D:depth>", "<D:timeout>Second-120</D:timeout>",
		"<D:href>" + tok + "</D:href>", "<D:lockroot><D:href>/dav/f.txt</D:href>", `<href xmlns="DAV:">mailto:alice@example.com</href>`} {
		if !strings.Contains(r.body, s) {
			t.Errorf("LOCK response lacks %s:\n%s", s, r.body)
		}
	}
	if ct := r.hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/xml") {
		t.Errorf("Content-Type %q", ct)
	}

	// Without the token: 423, whatever the method; with a false If: 412.
	e.want(423, "alice", "PUT", "/dav/f.txt", "v2")
	e.want(423, "alice", "DELETE", "/dav/f.txt", "")
	e.want(423, "alice", "PROPPATCH", "/dav/f.txt", `<propertyupdate xmlns="DAV:"><set><prop><x xmlns="urn:t">1</x></prop></set></propertyupdate>`)
	e.want(423, "alice", "MOVE", "/dav/f.txt", "", "Destination: /dav/g.txt")
	e.want(412, "alice", "PUT", "/dav/f.txt", "v2", "If: (<opaquelocktoken:00000000-0000-4000-8000-000000000000>)")
	e.want(412, "alice", "PUT", "/dav/f.txt", "v2", "If: (<"+tok+"> [\"not-the-etag\"])")
	e.want(423, "alice", "PUT", "/dav/f.txt", "v2", "If: (<"+tok+"x>) (Not <DAV:no-lock>)") // true If, but no token
	e.want(400, "alice", "PUT", "/dav/f.txt", "v2", "If: (<"+tok+">")
	e.want(423, "alice", "LOCK", "/dav/f.txt", lockExclusive)
	e.want(423, "alice", "LOCK", "/dav/f.txt", lockShared)
	if got := e.want(200, "alice", "GET", "/dav/f.txt", "").body; got != "v1" {
		t.Fatalf("refused writes changed the file: %q", got)
	}
	// Reading and copying the locked file away need no token.
	e.want(201, "alice", "COPY", "/dav/f.txt", "", "Destination: /dav/copy.txt")
	e.want(204, "alice", "DELETE", "/dav/copy.txt", "") // the copy is not locked

	// With the token (untagged, tagged, with the ETag): allowed.
	e.want(204, "alice", "PUT", "/dav/f.txt", "v2", "If: (<"+tok+">)")
	etag := e.want(200, "alice", "GET", "/dav/f.txt", "").hdr.Get("ETag")
	e.want(204, "alice", "PUT", "/dav/f.txt", "v3", "If: <"+e.url+"/dav/f.txt> (<"+tok+"> ["+etag+"])")
	e.want(412, "alice", "PUT", "/dav/f.txt", "v4", "If: <"+e.url+"/dav/f.txt> (<"+tok+"> ["+etag+"])") // stale ETag now
	e.want(207, "alice", "PROPPATCH", "/dav/f.txt", `<propertyupdate xmlns="DAV:"><set><prop><x xmlns="urn:t">1</x></prop></set></propertyupdate>`, "If: (<"+tok+">)")

	// Another user: neither blocked on their own f.txt nor able to use the token.
	e.want(201, "bob", "PUT", "/dav/f.txt", "bob's")
	e.want(412, "bob", "PUT", "/dav/f.txt", "bob's", "If: (<"+tok+">)")
	e.want(409, "bob", "UNLOCK", "/dav/f.txt", "", "Lock-Token: <"+tok+">")

	// PROPFIND shows the lock; UNLOCK ends it.
	pf := e.want(207, "alice", "PROPFIND", "/dav/f.txt", `<propfind xmlns="DAV:"><prop><lockdiscovery/><supportedlock/></prop></propfind>`, "Depth: 0")
	if !strings.Contains(pf.body, tok) || !strings.Contains(pf.body, "shared") {
		t.Errorf("PROPFIND lockdiscovery/supportedlock:\n%s", pf.body)
	}
	e.want(409, "alice", "UNLOCK", "/dav/f.txt", "", "Lock-Token: <opaquelocktoken:nope>")
	e.want(400, "alice", "UNLOCK", "/dav/f.txt", "")
	e.want(204, "alice", "UNLOCK", "/dav/f.txt", "", "Lock-Token: <"+tok+">")
	e.want(204, "alice", "PUT", "/dav/f.txt", "v5")
	e.want(412, "alice", "PUT", "/dav/f.txt", "v6", "If: (<"+tok+">)") // litmus fail_cond_put_unlocked
}

func TestLockRefreshAndExpiry(t *testing.T) {
	e := startLockEnv(t)
	e.want(201, "alice", "PUT", "/dav/f", "x")
	tok := e.lock(200, "alice", "/dav/f", lockExclusive, "Timeout: Infinite, Second-4100000000")
	e.clock.Advance(50 * time.Minute)
	e.want(423, "alice", "PUT", "/dav/f", "y")
	// Refresh: no body, If names the lock; the Timeout is clamped again.
	r := e.want(200, "alice", "LOCK", "/dav/f", "", "If: (<"+tok+">)", "Timeout: Second-600")
	if !strings.Contains(r.body, "Second-600") || r.hdr.Get("Lock-Token") != "" {
		t.Errorf("refresh response (Lock-Token %q):\n%s", r.hdr.Get("Lock-Token"), r.body)
	}
	e.want(400, "alice", "LOCK", "/dav/f", "")                                 // refresh without If
	e.want(412, "alice", "LOCK", "/dav/f", "", "If: (<opaquelocktoken:nope>)") // unknown lock
	e.clock.Advance(599 * time.Second)
	e.want(423, "alice", "PUT", "/dav/f", "y")
	e.clock.Advance(time.Second)
	e.want(204, "alice", "PUT", "/dav/f", "y") // expired: no token needed
	e.want(412, "alice", "LOCK", "/dav/f", "", "If: (<"+tok+">)")
}

func TestLockUnmappedAndCollections(t *testing.T) {
	e := startLockEnv(t)
	// LOCK on an unmapped URL creates an empty file (201).
	tok := e.lock(201, "alice", "/dav/new.txt", lockExclusive)
	if r := e.want(200, "alice", "GET", "/dav/new.txt", ""); r.body != "" {
		t.Errorf("lock-null resource holds %q", r.body)
	}
	e.want(409, "alice", "LOCK", "/dav/nodir/x", lockExclusive)
	e.want(204, "alice", "PUT", "/dav/new.txt", "data", "If: (<"+tok+">)")

	// Depth-infinity lock on a collection covers members, existing or new.
	e.want(201, "alice", "MKCOL", "/dav/c", "")
	e.want(201, "alice", "PUT", "/dav/c/m", "m")
	ctok := e.lock(200, "alice", "/dav/c/", lockExclusive)
	e.want(423, "alice", "PUT", "/dav/c/m", "m2")
	e.want(423, "alice", "PUT", "/dav/c/new", "n")
	e.want(423, "alice", "MKCOL", "/dav/c/sub", "")
	e.want(423, "alice", "LOCK", "/dav/c/m", lockExclusive)
	e.want(423, "alice", "MOVE", "/dav/new.txt", "", "If: (<"+tok+">)", "Destination: /dav/c/moved")
	cond := "If: <" + e.url + "/dav/c/> (<" + ctok + ">)"
	e.want(204, "alice", "PUT", "/dav/c/m", "m2", cond) // litmus owner_modify on a collection
	e.want(201, "alice", "PUT", "/dav/c/new", "n", cond)
	if r := e.want(207, "alice", "PROPFIND", "/dav/c/new", `<propfind xmlns="DAV:"><prop><lockdiscovery/></prop></propfind>`, "Depth: 0"); !strings.Contains(r.body, ctok) || !strings.Contains(r.body, "<D:lockroot><D:href>/dav/c</D:href>") {
		t.Errorf("member's lockdiscovery lacks the collection lock:\n%s", r.body)
	}
	// Refresh through a member (litmus indirect_refresh).
	e.want(200, "alice", "LOCK", "/dav/c/m", "", "If: <"+e.url+"/dav/c/> (<"+ctok+">)")
	e.want(204, "alice", "UNLOCK", "/dav/c/m", "", "Lock-Token: <"+ctok+">")

	// A depth-0 lock on a collection guards its membership only.
	d0 := e.lock(200, "alice", "/dav/c", lockExclusive, "Depth: 0")
	e.want(204, "alice", "PUT", "/dav/c/m", "m3")
	e.want(423, "alice", "PUT", "/dav/c/other", "o")
	e.want(423, "alice", "DELETE", "/dav/c/m", "")
	e.want(201, "alice", "PUT", "/dav/c/other", "o", "If: <"+e.url+"/dav/c> (<"+d0+">)")
	e.want(204, "alice", "UNLOCK", "/dav/c", "", "Lock-Token: <"+d0+">")

	// DELETE of a collection needs the tokens of locked members.
	mtok := e.lock(200, "alice", "/dav/c/m", lockExclusive)
	e.want(423, "alice", "DELETE", "/dav/c", "")
	e.want(204, "alice", "DELETE", "/dav/c", "", "If: <"+e.url+"/dav/c/m> (<"+mtok+">)")
	// ... and the lock died with it (golang/go#42839): a new file there is free.
	e.want(201, "alice", "MKCOL", "/dav/c", "")
	e.want(201, "alice", "PUT", "/dav/c/m", "again")
	e.want(409, "alice", "UNLOCK", "/dav/c/m", "", "Lock-Token: <"+mtok+">")
}

func TestLockMoveDelete(t *testing.T) {
	e := startLockEnv(t)
	// Windows saves: LOCK the temp file, MOVE it over the original with only
	// the source's token (golang/go#43556).
	e.want(201, "alice", "PUT", "/dav/doc.docx", "old")
	tmp := e.lock(201, "alice", "/dav/~tmp1.TMP", lockExclusive)
	e.want(204, "alice", "PUT", "/dav/~tmp1.TMP", "new", "If: (<"+tmp+">)")
	e.want(204, "alice", "MOVE", "/dav/~tmp1.TMP", "", "If: (<"+tmp+">)", "Destination: /dav/doc.docx")
	if got := e.want(200, "alice", "GET", "/dav/doc.docx", "").body; got != "new" {
		t.Fatalf("moved content %q", got)
	}
	// The source's lock did not move with it, nor stay behind.
	e.want(204, "alice", "PUT", "/dav/doc.docx", "edit")
	e.want(201, "alice", "PUT", "/dav/~tmp1.TMP", "free")
	e.want(409, "alice", "UNLOCK", "/dav/~tmp1.TMP", "", "Lock-Token: <"+tmp+">")

	// A lock on the destination stays and takes in the moved resource.
	dst := e.lock(200, "alice", "/dav/doc.docx", lockExclusive)
	e.want(423, "alice", "MOVE", "/dav/~tmp1.TMP", "", "Destination: /dav/doc.docx")
	e.want(204, "alice", "MOVE", "/dav/~tmp1.TMP", "", "If: <"+e.url+"/dav/doc.docx> (<"+dst+">)", "Destination: /dav/doc.docx")
	e.want(423, "alice", "PUT", "/dav/doc.docx", "x")

	// DELETE with the token releases the lock: the next PUT needs none
	// (Windows: LOCK, PUT 0 bytes, DELETE, PUT).
	e.want(204, "alice", "DELETE", "/dav/doc.docx", "", "If: (<"+dst+">)")
	e.want(201, "alice", "PUT", "/dav/doc.docx", "fresh")
	e.want(404, "alice", "DELETE", "/dav/nosuch", "")
}

func TestLockShared(t *testing.T) {
	e := startLockEnv(t)
	e.want(201, "alice", "PUT", "/dav/s", "x")
	a := e.lock(200, "alice", "/dav/s", lockShared)
	b := e.lock(200, "alice", "/dav/s", lockShared)
	e.want(423, "alice", "PUT", "/dav/s", "y")
	e.want(204, "alice", "PUT", "/dav/s", "y", "If: (<"+a+">)")
	e.want(204, "alice", "PUT", "/dav/s", "z", "If: (<"+b+">)")
	r := e.want(207, "alice", "PROPFIND", "/dav/s", `<propfind xmlns="DAV:"><prop><lockdiscovery/></prop></propfind>`, "Depth: 0")
	if !strings.Contains(r.body, a) || !strings.Contains(r.body, b) || !strings.Contains(r.body, "alice &amp; co") {
		t.Errorf("lockdiscovery of two shared locks:\n%s", r.body)
	}
}

func TestLockBadInput(t *testing.T) {
	e := startLockEnv(t)
	e.want(201, "alice", "PUT", "/dav/f", "x")
	e.want(400, "alice", "LOCK", "/dav/f", "<lockinfo xmlns='DAV:'><lockscope><exclusive/>")
	e.want(400, "alice", "LOCK", "/dav/f", "<lockinfo xmlns='DAV:'><locktype><write/></locktype></lockinfo>")
	e.want(400, "alice", "LOCK", "/dav/f", "<lockinfo xmlns='DAV:'><lockscope><exclusive/><shared/></lockscope><locktype><write/></locktype></lockinfo>")
	e.want(400, "alice", "LOCK", "/dav/f", "<lockinfo xmlns='urn:other'><lockscope><exclusive/></lockscope><locktype><write/></locktype></lockinfo>")
	e.want(400, "alice", "LOCK", "/dav/f", lockExclusive, "Depth: 1")
	big := "<lockinfo xmlns='DAV:'><owner>" + strings.Repeat("x", maxLockBody) + "</owner></lockinfo>"
	e.want(413, "alice", "LOCK", "/dav/f", big)
	longOwner := "<lockinfo xmlns='DAV:'><lockscope><exclusive/></lockscope><locktype><write/></locktype><owner>" + strings.Repeat("x", maxOwnerXML+1) + "</owner></lockinfo>"
	e.want(400, "alice", "LOCK", "/dav/f", longOwner)
	e.want(400, "alice", "DELETE", "/dav/f", "", "If: garbage")
	e.want(400, "alice", "UNLOCK", "/dav/f", "", "Lock-Token: opaquelocktoken:no-brackets")
	if e.h.Locks.Count(1)+e.h.Locks.Count(2) != 0 {
		t.Error("a refused LOCK left a lock")
	}

	// The per-user bound answers 503 with a message saying why.
	e.h.Locks.(*davlock.Manager).SetMax(3)
	for _, p := range []string{"/dav/a", "/dav/b", "/dav/c"} {
		e.lock(201, "alice", p, lockExclusive)
	}
	r := e.want(503, "alice", "LOCK", "/dav/d", lockExclusive)
	if !strings.Contains(r.body, "too many locks") {
		t.Errorf("503 body %q", r.body)
	}
	if e.do("alice", "GET", "/dav/d", "").status != 404 {
		t.Error("refused LOCK created the file")
	}
}

func TestOptionsAdvertisesLocking(t *testing.T) {
	e := startLockEnv(t)
	r := e.want(200, "alice", "OPTIONS", "/dav/", "")
	if r.hdr.Get("DAV") != "1, 2" || r.hdr.Get("MS-Author-Via") != "DAV" || !strings.Contains(r.hdr.Get("Allow"), "LOCK") {
		t.Errorf("OPTIONS headers: %v", r.hdr)
	}
}
