package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"netdisk/meta"
	"netdisk/testutil"
)

type quotaBody struct {
	Total, Finished, Metadata, Unfinished, Uploading, Free int64
}

// ec is what a new entry named name costs against the quota.
func ec(name string) int64 { return meta.EntryCharge(name) }

// withLedgers runs fn against a real daemon on the embedded ledger and on a
// real redis-server (--redis).
func withLedgers(t *testing.T, fn func(t *testing.T, x *tester, r *testutil.Redis)) {
	t.Run("embedded", func(t *testing.T) { fn(t, start(t), nil) })
	t.Run("redis", func(t *testing.T) {
		r := testutil.StartRedis(t)
		fn(t, start(t, "--redis", r.URL), r)
	})
}

func (x *tester) quota(user string) quotaBody {
	x.t.Helper()
	var q quotaBody
	if st := x.call(user, "GET", "/api/v1/quota", nil, &q); st != 200 {
		x.t.Fatalf("GET /api/v1/quota: %d", st)
	}
	return q
}

// raw sends a request as user and returns its status and body; size < 0
// sends the body chunked (no Content-Length), otherwise its length is sent.
func (x *tester) raw(user, method, path string, body []byte, size int64, hdr map[string]string) (int, string) {
	x.t.Helper()
	if size >= 0 {
		size = int64(len(body))
	}
	resp, b := x.send(user, pass(user, x.d), method, path, body, size, hdr)
	return resp.StatusCode, b
}

func (x *tester) wantQuota(user string, want quotaBody) {
	x.t.Helper()
	if got := x.quota(user); got != want {
		x.t.Fatalf("quota = %+v, want %+v", got, want)
	}
}

// Every way bytes enter is refused with 507 past the quota, before anything
// is stored, with a message saying what is free; deletes give space back.
func TestQuotaEnforcedEverywhere(t *testing.T) {
	withLedgers(t, func(t *testing.T, x *tester, _ *testutil.Redis) {
		const total = 4 * cs
		x.addUser("quinn", total)
		chunks0 := x.stats()
		// API init beyond the quota.
		var e struct {
			Error        string
			Free, Needed *int64
		}
		if st := x.call("quinn", "POST", "/api/v1/file/init", map[string]any{"path": "/big", "size": 5 * cs}, &e); st != 507 {
			t.Fatalf("init of 5 chunks under a 4-chunk quota: %d", st)
		}
		// The message in the product's units, the exact counts beside it.
		if e.Error != "quota exceeded: 256 KiB free, 320 KiB needed" || e.Free == nil || *e.Free != 4*cs || e.Needed == nil || *e.Needed != 5*cs {
			t.Fatalf("init over quota answers %q, free %v, needed %v", e.Error, e.Free, e.Needed)
		}
		// WebDAV PUT with a Content-Length beyond the quota.
		st, msg := x.raw("quinn", "PUT", "/dav/big.bin", testutil.RandBytes(5*cs), 5*cs, nil)
		if st != 507 || !strings.Contains(msg, "256 KiB free, 320 KiB needed") {
			t.Fatalf("PUT of 5 chunks: %d %q, want 507 saying 256 KiB free, 320 KiB needed", st, msg)
		}
		if x.stats() != chunks0 {
			t.Fatal("a refused PUT stored chunks")
		}
		// A PUT that fits.
		if st, msg := x.raw("quinn", "PUT", "/dav/a.bin", testutil.RandBytes(3*cs), 3*cs, nil); st != 201 {
			t.Fatalf("PUT of 3 chunks: %d %s", st, msg)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: 3 * cs, Metadata: ec("a.bin"), Free: cs - ec("a.bin")})
		// Chunked PUT (no length) beyond what is left: refused as it grows.
		if st, msg := x.raw("quinn", "PUT", "/dav/c.bin", testutil.RandBytes(2*cs), -1, nil); st != 507 {
			t.Fatalf("chunked PUT of 2 chunks with 1 free: %d %s", st, msg)
		}
		if st, _ := x.raw("quinn", "GET", "/dav/c.bin", nil, 0, nil); st != 404 {
			t.Fatalf("refused chunked PUT left a file: %d", st)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: 3 * cs, Metadata: ec("a.bin"), Free: cs - ec("a.bin")})
		// X-Expected-Entity-Length announces the size of a chunked body.
		if st, _ := x.raw("quinn", "PUT", "/dav/d.bin", testutil.RandBytes(2*cs), -1, map[string]string{"X-Expected-Entity-Length": "131072"}); st != 507 {
			t.Fatalf("chunked PUT announcing 2 chunks: %d", st)
		}
		// WebDAV COPY and API copy of 3 chunks with 1 free.
		if st, _ := x.raw("quinn", "COPY", "/dav/a.bin", nil, 0, map[string]string{"Destination": x.d.URL + "/dav/b.bin"}); st != 507 {
			t.Fatalf("COPY beyond the quota: %d", st)
		}
		if st := x.call("quinn", "POST", "/api/v1/fs/copy", map[string]any{"from": "/a.bin", "to": "/b.bin"}, nil); st != 507 {
			t.Fatalf("fs/copy beyond the quota: %d", st)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: 3 * cs, Metadata: ec("a.bin"), Free: cs - ec("a.bin")})
		// A chunked PUT that fits exactly, its entry included, is accepted
		// and counted; one byte more is not.
		last := cs - ec("a.bin") - ec("e.bin")
		if st, msg := x.raw("quinn", "PUT", "/dav/e.bin", testutil.RandBytes(int(last)+1), -1, nil); st != 507 {
			t.Fatalf("chunked PUT one byte past the quota (its entry counted): %d %s", st, msg)
		}
		if st, msg := x.raw("quinn", "PUT", "/dav/e.bin", testutil.RandBytes(int(last)), -1, nil); st != 201 {
			t.Fatalf("chunked PUT of the last free bytes: %d %s", st, msg)
		}
		meta2 := ec("a.bin") + ec("e.bin")
		x.wantQuota("quinn", quotaBody{Total: total, Finished: total - meta2, Metadata: meta2, Free: 0})
		// Delete gives the space back; overwrite counts the difference.
		if st, _ := x.raw("quinn", "DELETE", "/dav/a.bin", nil, 0, nil); st != 204 {
			t.Fatalf("DELETE: %d", st)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: last, Metadata: ec("e.bin"), Free: total - last - ec("e.bin")})
		if st, _ := x.raw("quinn", "COPY", "/dav/e.bin", nil, 0, map[string]string{"Destination": x.d.URL + "/dav/f.bin"}); st != 201 {
			t.Fatalf("COPY that fits: %d", st)
		}
		if st, _ := x.raw("quinn", "PUT", "/dav/f.bin", testutil.RandBytes(10), 10, nil); st != 204 {
			t.Fatalf("overwrite: %d", st)
		}
		meta2 = ec("e.bin") + ec("f.bin")
		x.wantQuota("quinn", quotaBody{Total: total, Finished: last + 10, Metadata: meta2, Free: total - last - 10 - meta2})
		// Sessions reserve their declared size; the admin sees both figures.
		in := x.init("quinn", "/s.bin", 2*cs)
		x.put("quinn", in.UploadID, testutil.RandBytes(2*cs), 0)
		x.wantQuota("quinn", quotaBody{Total: total, Finished: last + 10, Metadata: meta2, Unfinished: cs, Uploading: 2 * cs, Free: total - last - 10 - meta2 - 2*cs})
		var users struct {
			Users []struct {
				Name                                             string
				Quota, Finished, Metadata, Unfinished, Uploading int64
			}
		}
		x.call("admin", "GET", "/api/v1/admin/users", nil, &users)
		for _, u := range users.Users {
			if u.Name == "quinn" && (u.Quota != total || u.Finished != last+10 || u.Metadata != meta2 || u.Unfinished != cs || u.Uploading != 2*cs) {
				t.Fatalf("admin list: %+v", u)
			}
		}
		// Lowering the total refuses new writes, takes nothing away.
		if st := x.call("admin", "PUT", "/api/v1/admin/users/quinn/quota", map[string]any{"quota": 2 * cs}, nil); st != 200 {
			t.Fatalf("set quota: %d", st)
		}
		if st, _ := x.raw("quinn", "PUT", "/dav/g.bin", []byte("x"), 1, nil); st != 507 {
			t.Fatalf("PUT after lowering the quota: %d", st)
		}
		x.wantQuota("quinn", quotaBody{Total: 2 * cs, Finished: last + 10, Metadata: meta2, Unfinished: cs, Uploading: 2 * cs, Free: 0})
	})
}

// kill -9 in the middle of uploads (a session with chunks, a WebDAV PUT
// streaming its body) and restart: usage is what SQLite says, exactly.
func TestQuotaExactAfterKill(t *testing.T) {
	withLedgers(t, func(t *testing.T, x *tester, _ *testutil.Redis) {
		x.addUser("kim", 100*cs)
		x.sendAll("kim", "/done.bin", testutil.RandBytes(2*cs+5))
		in := x.init("kim", "/half.bin", 3*cs)
		b := testutil.RandBytes(3 * cs)
		x.put("kim", in.UploadID, b, 0)
		x.put("kim", in.UploadID, b, 2)
		// A PUT whose body never ends: its reservation is held when we kill.
		pr, pw := io.Pipe()
		defer pw.Close()
		req, _ := http.NewRequest("PUT", x.d.URL+"/dav/stream.bin", pr)
		req.ContentLength = 10 * cs
		req.SetBasicAuth("kim", "pw-kim")
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		pw.Write(testutil.RandBytes(cs))
		want := quotaBody{Total: 100 * cs, Finished: 2*cs + 5, Metadata: ec("done.bin"), Unfinished: 2 * cs, Uploading: 3 * cs}
		deadline := time.Now().Add(10 * time.Second)
		for x.quota("kim").Uploading != 13*cs+ec("stream.bin") {
			if time.Now().After(deadline) {
				t.Fatalf("the PUT's reservation never showed: %+v", x.quota("kim"))
			}
			time.Sleep(10 * time.Millisecond)
		}
		x.d.Kill()
		x.d.Restart()
		want.Free = want.Total - want.Finished - want.Metadata - want.Uploading
		x.wantQuota("kim", want)
		// The session resumes and merges; nothing is left reserved.
		x.put("kim", in.UploadID, b, 1)
		if st := x.merge("kim", in.UploadID, fileHash(b), nil); st != 200 {
			t.Fatalf("merge after restart: %d", st)
		}
		m := ec("done.bin") + ec("half.bin")
		x.wantQuota("kim", quotaBody{Total: 100 * cs, Finished: 5*cs + 5, Metadata: m, Free: 95*cs - 5 - m})
	})
}

// A lost Redis (FLUSHALL, or killed and restarted empty) is reconciled from
// SQLite; while Redis is down uploads fail with 503 and none succeeds
// uncounted; afterwards they work again and usage is exact.
func TestQuotaRedisLost(t *testing.T) {
	r := testutil.StartRedis(t)
	x := start(t, "--redis", r.URL)
	x.addUser("rita", 100*cs)
	x.sendAll("rita", "/a.bin", testutil.RandBytes(2*cs))
	in := x.init("rita", "/open.bin", 2*cs)
	b := testutil.RandBytes(2 * cs)
	x.put("rita", in.UploadID, b, 0)
	want := quotaBody{Total: 100 * cs, Finished: 2 * cs, Metadata: ec("a.bin"), Unfinished: cs, Uploading: 2 * cs, Free: 96*cs - ec("a.bin")}
	x.wantQuota("rita", want)

	waitExact := func(what string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			var q quotaBody
			st := x.call("rita", "GET", "/api/v1/quota", nil, &q)
			if st == 200 && q == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: quota %d %+v, want %+v", what, st, q, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	r.FlushAll()
	waitExact("after FLUSHALL")

	r.Kill()
	if st := x.call("rita", "POST", "/api/v1/file/init", map[string]any{"path": "/n.bin", "size": 10}, nil); st != 503 {
		t.Fatalf("init with Redis down: %d, want 503", st)
	}
	if st := x.put("rita", in.UploadID, b, 1); st != 503 {
		t.Fatalf("chunk with Redis down: %d, want 503", st)
	}
	if st, _ := x.raw("rita", "PUT", "/dav/n.bin", []byte("hello"), 5, nil); st != 503 {
		t.Fatalf("WebDAV PUT with Redis down: %d, want 503", st)
	}
	var res json.RawMessage
	if st := x.call("rita", "POST", "/api/v1/fs/copy", map[string]any{"from": "/a.bin", "to": "/b.bin"}, &res); st != 503 {
		t.Fatalf("copy with Redis down: %d, want 503", st)
	}
	r.Restart() // empty
	waitExact("after a restart of Redis")
	if st := x.put("rita", in.UploadID, b, 1); st != 200 {
		t.Fatalf("chunk after recovery: %d", st)
	}
	if st := x.merge("rita", in.UploadID, fileHash(b), nil); st != 200 {
		t.Fatalf("merge after recovery: %d", st)
	}
	if st, _ := x.raw("rita", "PUT", "/dav/n.bin", []byte("hello"), 5, nil); st != 201 {
		t.Fatalf("WebDAV PUT after recovery: %d", st)
	}
	m := ec("a.bin") + ec("open.bin") + ec("n.bin")
	want = quotaBody{Total: 100 * cs, Finished: 4*cs + 5, Metadata: m, Free: 96*cs - 5 - m}
	x.wantQuota("rita", want)
	_ = context.Background
}

// Entries and dead properties are charged against the quota on every
// surface that makes them (WebDAV MKCOL, PUT and PROPPATCH, the one-request
// upload, a session's merge with the folders it creates), are refused with
// 507 once they do not fit, are given back by deletes, and the figures
// survive a rebuild of the ledger from the database (a restart; FLUSHALL of
// Redis).
func TestMetadataCharged(t *testing.T) {
	withLedgers(t, func(t *testing.T, x *tester, r *testutil.Redis) {
		const total = 16 << 10
		x.addUser("meg", total)
		var charged int64
		check := func(what string, finished int64) {
			t.Helper()
			x.wantQuota("meg", quotaBody{Total: total, Finished: finished, Metadata: charged, Free: max(total-finished-charged, 0)})
		}
		// Empty folders until the quota is spent.
		var dirs []string
		for i := 0; ; i++ {
			name := fmt.Sprintf("d%03d", i)
			st, msg := x.raw("meg", "MKCOL", "/dav/"+name, nil, 0, nil)
			if st == 507 {
				if !strings.Contains(msg, "quota exceeded") {
					t.Fatalf("MKCOL past the quota: %q", msg)
				}
				break
			}
			if st != 201 || i > total/meta.EntryBytes {
				t.Fatalf("MKCOL %s: %d %s (%d folders in a %d-byte quota)", name, st, msg, i, total)
			}
			dirs = append(dirs, name)
			charged += ec(name)
		}
		if want := total / ec("d000"); int64(len(dirs)) != want {
			t.Fatalf("%d empty folders fit in %d bytes, want %d", len(dirs), total, want)
		}
		check("folders", 0)
		// Empty files on every surface are refused too.
		if st, _ := x.raw("meg", "PUT", "/dav/empty", nil, 0, nil); st != 507 {
			t.Fatalf("empty WebDAV PUT past the quota: %d", st)
		}
		if st, _ := x.raw("meg", "PUT", "/api/v1/file/upload?path=/empty", nil, 0, nil); st != 507 {
			t.Fatalf("empty one-request upload past the quota: %d", st)
		}
		check("refused files", 0)
		// Deleting gives the charge back; a file, a property and a merge
		// into new folders use it.
		for _, d := range dirs[:8] {
			if st, _ := x.raw("meg", "DELETE", "/dav/"+d, nil, 0, nil); st != 204 {
				t.Fatalf("DELETE: %d", st)
			}
			charged -= ec(d)
		}
		check("deletes", 0)
		if st, _ := x.raw("meg", "PUT", "/dav/f.txt", []byte("hello"), 5, nil); st != 201 {
			t.Fatalf("PUT: %d", st)
		}
		charged += ec("f.txt")
		check("a file", 5)
		patch := `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><t:note xmlns:t="urn:t">` + strings.Repeat("n", 100) + `</t:note></D:prop></D:set></D:propertyupdate>`
		if st, body := x.raw("meg", "PROPPATCH", "/dav/f.txt", []byte(patch), int64(len(patch)), nil); st != 207 || !strings.Contains(body, "200 OK") {
			t.Fatalf("PROPPATCH: %d %s", st, body)
		}
		charged += meta.Prop{Space: "urn:t", Local: "note", InnerXML: strings.Repeat("n", 100)}.Bytes()
		check("a property", 5)
		b := []byte("merged")
		x.sendAll("meg", "/s/t/u.bin", b)
		charged += ec("s") + ec("t") + ec("u.bin")
		check("a merge into new folders", 5+int64(len(b)))
		// A property that does not fit is 507 in its propstat.
		big := `<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><t:big xmlns:t="urn:t">` + strings.Repeat("b", 8<<10) + `</t:big></D:prop></D:set></D:propertyupdate>`
		if st, body := x.raw("meg", "PROPPATCH", "/dav/f.txt", []byte(big), int64(len(big)), nil); st != 207 || !strings.Contains(body, "507") {
			t.Fatalf("PROPPATCH past the quota: %d %s", st, body)
		}
		check("a refused property", 5+int64(len(b)))
		// The ledger rebuilt from the database finds the same figures.
		if r != nil {
			r.FlushAll()
		} else {
			x.d.Kill()
			x.d.Restart()
		}
		deadline := time.Now().Add(15 * time.Second)
		for {
			var q quotaBody
			if st := x.call("meg", "GET", "/api/v1/quota", nil, &q); st == 200 && q.Metadata == charged || time.Now().After(deadline) {
				break // 503 until the ledger is rebuilt
			}
			time.Sleep(20 * time.Millisecond)
		}
		check("after a rebuild", 5+int64(len(b)))
		// Everything deleted: nothing is charged.
		for _, p := range append(dirs[8:], "f.txt", "s") {
			if st, _ := x.raw("meg", "DELETE", "/dav/"+p, nil, 0, nil); st != 204 {
				t.Fatalf("DELETE %s: %d", p, st)
			}
		}
		charged = 0
		check("all deleted", 0)
	})
}
