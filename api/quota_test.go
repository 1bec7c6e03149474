package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"netdisk/internal/testutil"
)

type quotaBody struct {
	Total, Finished, Unfinished, Uploading, Free int64
}

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
		var e struct{ Error string }
		if st := x.call("quinn", "POST", "/api/v1/file/init", map[string]any{"path": "/big", "size": 5 * cs}, &e); st != 507 {
			t.Fatalf("init of 5 chunks under a 4-chunk quota: %d", st)
		}
		// WebDAV PUT with a Content-Length beyond the quota.
		st, msg := x.raw("quinn", "PUT", "/dav/big.bin", randBytes(5*cs), 5*cs, nil)
		if st != 507 || !strings.Contains(msg, "262144 bytes free") {
			t.Fatalf("PUT of 5 chunks: %d %q, want 507 saying 262144 bytes free", st, msg)
		}
		if x.stats() != chunks0 {
			t.Fatal("a refused PUT stored chunks")
		}
		// A PUT that fits.
		if st, msg := x.raw("quinn", "PUT", "/dav/a.bin", randBytes(3*cs), 3*cs, nil); st != 201 {
			t.Fatalf("PUT of 3 chunks: %d %s", st, msg)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: 3 * cs, Free: cs})
		// Chunked PUT (no length) beyond what is left: refused as it grows.
		if st, msg := x.raw("quinn", "PUT", "/dav/c.bin", randBytes(2*cs), -1, nil); st != 507 {
			t.Fatalf("chunked PUT of 2 chunks with 1 free: %d %s", st, msg)
		}
		if st, _ := x.raw("quinn", "GET", "/dav/c.bin", nil, 0, nil); st != 404 {
			t.Fatalf("refused chunked PUT left a file: %d", st)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: 3 * cs, Free: cs})
		// X-Expected-Entity-Length announces the size of a chunked body.
		if st, _ := x.raw("quinn", "PUT", "/dav/d.bin", randBytes(2*cs), -1, map[string]string{"X-Expected-Entity-Length": "131072"}); st != 507 {
			t.Fatalf("chunked PUT announcing 2 chunks: %d", st)
		}
		// WebDAV COPY and API copy of 3 chunks with 1 free.
		if st, _ := x.raw("quinn", "COPY", "/dav/a.bin", nil, 0, map[string]string{"Destination": x.d.URL + "/dav/b.bin"}); st != 507 {
			t.Fatalf("COPY beyond the quota: %d", st)
		}
		if st := x.call("quinn", "POST", "/api/v1/fs/copy", map[string]any{"from": "/a.bin", "to": "/b.bin"}, nil); st != 507 {
			t.Fatalf("fs/copy beyond the quota: %d", st)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: 3 * cs, Free: cs})
		// A chunked PUT that fits exactly is accepted and counted.
		if st, msg := x.raw("quinn", "PUT", "/dav/e.bin", randBytes(cs), -1, nil); st != 201 {
			t.Fatalf("chunked PUT of the last free chunk: %d %s", st, msg)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: total, Free: 0})
		// Delete gives the space back; overwrite counts the difference.
		if st, _ := x.raw("quinn", "DELETE", "/dav/a.bin", nil, 0, nil); st != 204 {
			t.Fatalf("DELETE: %d", st)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: cs, Free: 3 * cs})
		if st, _ := x.raw("quinn", "COPY", "/dav/e.bin", nil, 0, map[string]string{"Destination": x.d.URL + "/dav/f.bin"}); st != 201 {
			t.Fatalf("COPY that fits: %d", st)
		}
		if st, _ := x.raw("quinn", "PUT", "/dav/f.bin", randBytes(10), 10, nil); st != 204 {
			t.Fatalf("overwrite: %d", st)
		}
		x.wantQuota("quinn", quotaBody{Total: total, Finished: cs + 10, Free: 3*cs - 10})
		// Sessions reserve their declared size; the admin sees both figures.
		in := x.init("quinn", "/s.bin", 2*cs)
		x.put("quinn", in.UploadID, randBytes(2*cs), 0)
		x.wantQuota("quinn", quotaBody{Total: total, Finished: cs + 10, Unfinished: cs, Uploading: 2 * cs, Free: cs - 10})
		var users struct {
			Users []struct {
				Name                                   string
				Quota, Finished, Unfinished, Uploading int64
			}
		}
		x.call("admin", "GET", "/api/v1/admin/users", nil, &users)
		for _, u := range users.Users {
			if u.Name == "quinn" && (u.Quota != total || u.Finished != cs+10 || u.Unfinished != cs || u.Uploading != 2*cs) {
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
		x.wantQuota("quinn", quotaBody{Total: 2 * cs, Finished: cs + 10, Unfinished: cs, Uploading: 2 * cs, Free: 0})
	})
}

// kill -9 in the middle of uploads (a session with chunks, a WebDAV PUT
// streaming its body) and restart: usage is what SQLite says, exactly.
func TestQuotaExactAfterKill(t *testing.T) {
	withLedgers(t, func(t *testing.T, x *tester, _ *testutil.Redis) {
		x.addUser("kim", 100*cs)
		x.sendAll("kim", "/done.bin", randBytes(2*cs+5))
		in := x.init("kim", "/half.bin", 3*cs)
		b := randBytes(3 * cs)
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
		pw.Write(randBytes(cs))
		want := quotaBody{Total: 100 * cs, Finished: 2*cs + 5, Unfinished: 2 * cs, Uploading: 3 * cs}
		deadline := time.Now().Add(10 * time.Second)
		for x.quota("kim").Uploading != 13*cs {
			if time.Now().After(deadline) {
				t.Fatalf("the PUT's reservation never showed: %+v", x.quota("kim"))
			}
			time.Sleep(10 * time.Millisecond)
		}
		x.d.Kill()
		x.d.Restart()
		want.Free = want.Total - want.Finished - want.Uploading
		x.wantQuota("kim", want)
		// The session resumes and merges; nothing is left reserved.
		x.put("kim", in.UploadID, b, 1)
		if st := x.merge("kim", in.UploadID, fileHash(b), nil); st != 200 {
			t.Fatalf("merge after restart: %d", st)
		}
		x.wantQuota("kim", quotaBody{Total: 100 * cs, Finished: 5*cs + 5, Free: 95*cs - 5})
	})
}

// A lost Redis (FLUSHALL, or killed and restarted empty) is reconciled from
// SQLite; while Redis is down uploads fail with 503 and none succeeds
// uncounted; afterwards they work again and usage is exact.
func TestQuotaRedisLost(t *testing.T) {
	r := testutil.StartRedis(t)
	x := start(t, "--redis", r.URL)
	x.addUser("rita", 100*cs)
	x.sendAll("rita", "/a.bin", randBytes(2*cs))
	in := x.init("rita", "/open.bin", 2*cs)
	b := randBytes(2 * cs)
	x.put("rita", in.UploadID, b, 0)
	want := quotaBody{Total: 100 * cs, Finished: 2 * cs, Unfinished: cs, Uploading: 2 * cs, Free: 96 * cs}
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
	want = quotaBody{Total: 100 * cs, Finished: 4*cs + 5, Free: 96*cs - 5}
	x.wantQuota("rita", want)
	_ = context.Background
}
