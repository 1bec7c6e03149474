package upload

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
)

// ledgers runs fn on the embedded ledger and on a real redis-server.
func ledgers(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Run("embedded", func(t *testing.T) { fn(t, newEnv(t)) })
	t.Run("redis", func(t *testing.T) {
		r := testutil.StartRedis(t)
		fn(t, newEnvWith(t, r.Client()))
	})
}

// truth is what SQLite says: what the user's tree is charged, counted
// from the tree (file sizes and entries, meta.SubtreeSize) and as the users
// row keeps it (finished bytes and metadata charge).
func (e *env) truth(uid int64) (files, finished int64) {
	e.t.Helper()
	ctx := context.Background()
	files, err := e.m.SubtreeSize(ctx, uid, "/")
	if err != nil {
		e.t.Fatal(err)
	}
	u, err := e.m.UserByID(ctx, uid)
	if err != nil {
		e.t.Fatal(err)
	}
	return files, u.Finished + u.Meta
}

// sqlUnfinished is the user's unfinished bytes as the database records them.
func (e *env) sqlUnfinished(uid int64) int64 {
	e.t.Helper()
	u, err := e.m.UserByID(context.Background(), uid)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.Unfinished
}

// The seed's attack: sessions opened and never finished are refused once
// finished + uploading reaches the total, and their space comes back when the
// janitor expires them.
func TestAbandonedSessionsRefusedThenExpire(t *testing.T) {
	ledgers(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		uid := e.user("mallory", 10*testChunk)
		var ids []string
		for i := 0; ; i++ {
			info, err := e.s.Init(ctx, uid, fmt.Sprintf("/junk%d", i), 2*testChunk, "")
			if errs.Is(err, errs.Quota) {
				if !strings.Contains(errs.Message(err), "0 B free") {
					t.Fatalf("refusal says %q, want how much is free", errs.Message(err))
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			c := testutil.RandBytes(testChunk)
			if err := e.s.PutChunk(ctx, uid, info.UploadID, 0, testutil.MD5Hex(c), bytes.NewReader(c), -1); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, info.UploadID)
		}
		if len(ids) != 5 {
			t.Fatalf("admitted %d sessions of 2 chunks under a 10-chunk quota, want 5", len(ids))
		}
		q, err := e.d.QuotaOf(ctx, uid)
		if err != nil || q.Uploading != 10*testChunk || q.Unfinished != 5*testChunk || q.Free() != 0 {
			t.Fatalf("usage = %+v, %v", q, err)
		}
		// A WebDAV-style write is refused too, before any byte is stored.
		if _, err := e.d.Create(ctx, uid, "/put.bin", drive.WriteOptions{ExpectedSize: 1}); !errs.Is(err, errs.Quota) {
			t.Fatalf("Create with the quota full: %v, want Quota", err)
		}
		// The delayed flush reaches SQLite once per session.
		e.clock.Advance(10 * time.Second)
		e.g.Tick(ctx, e.clock.Now())
		flushed := e.sqlUnfinished(uid)
		if flushed != 5*testChunk {
			t.Fatalf("SQLite unfinished after the flush = %d, want %d", flushed, 5*testChunk)
		}
		e.clock.Advance(time.Hour + time.Second)
		if n, err := e.s.Expire(ctx); err != nil || n != 5 {
			t.Fatalf("Expire = %d, %v; want 5", n, err)
		}
		q, err = e.d.QuotaOf(ctx, uid)
		if err != nil || q.Uploading != 0 || q.Unfinished != 0 || q.Free() != 10*testChunk {
			t.Fatalf("usage after expiry = %+v, %v", q, err)
		}
		if flushed = e.sqlUnfinished(uid); flushed != 0 {
			t.Fatalf("SQLite unfinished after expiry = %d", flushed)
		}
		// All of it, the new file's entry included (meta/charge.go).
		if _, err := e.upload(uid, "/real", testutil.RandBytes(10*testChunk-int(meta.EntryCharge("real")))); err != nil {
			t.Fatalf("upload after expiry: %v", err)
		}
	})
}

// Random concurrent sessions, merges, aborts, overwrites, copies and deletes
// of one user never take committed usage past the total, and end exact:
// finished equals the sum of the file sizes, and nothing is left reserved.
func TestConcurrentWritesKeepInvariant(t *testing.T) {
	ledgers(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		const total = 12 * testChunk
		uid := e.user("olga", total)
		stop := make(chan struct{})
		var watch sync.WaitGroup
		watch.Add(1)
		var over error
		go func() {
			defer watch.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				u, err := e.g.Usage(ctx, uid)
				if err == nil && u.Committed() > total {
					over = fmt.Errorf("committed %d > total %d (%+v)", u.Committed(), total, u)
				}
			}
		}()
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), 7))
				for i := 0; i < 25; i++ {
					p := fmt.Sprintf("/f%d", r.IntN(4))
					var err error
					switch r.IntN(5) {
					case 0, 1:
						_, err = e.upload(uid, p, testutil.RandBytes(r.IntN(3*testChunk)+1))
					case 2:
						var info Info
						if info, err = e.s.Init(ctx, uid, p+".part", int64(2*testChunk), ""); err == nil {
							c := testutil.RandBytes(testChunk)
							e.s.PutChunk(ctx, uid, info.UploadID, 0, testutil.MD5Hex(c), bytes.NewReader(c), -1)
							err = e.s.Abort(ctx, uid, info.UploadID)
						}
					case 3:
						err = e.d.Copy(ctx, uid, p, fmt.Sprintf("/c%d", r.IntN(3)), true, true)
					case 4:
						err = e.d.Remove(ctx, uid, p)
					}
					if err != nil && !errs.Is(err, errs.Quota) && !errs.Is(err, errs.NotFound) && !errs.Is(err, errs.Conflict) {
						t.Errorf("op: %v", err)
					}
				}
			}(w)
		}
		wg.Wait()
		close(stop)
		watch.Wait()
		if over != nil {
			t.Fatal(over)
		}
		// A merge refused because its file's entry no longer fits (meta/charge.go)
		// leaves its session open for a retry; the client gives up here.
		open, err := e.m.OpenSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range open {
			if err := e.s.Abort(ctx, uid, o.ID); err != nil {
				t.Fatal(err)
			}
		}
		files, finished := e.truth(uid)
		u, err := e.g.Usage(ctx, uid)
		if err != nil {
			t.Fatal(err)
		}
		if u.Finished != files || finished != files || u.Uploading != 0 || u.Unfinished != 0 {
			t.Fatalf("ledger %+v, SQLite finished %d, files %d", u, finished, files)
		}
		// A rebuild from SQLite finds the same figures.
		if err := e.g.Reconcile(ctx); err != nil {
			t.Fatal(err)
		}
		if v, _ := e.g.Usage(ctx, uid); v != u {
			t.Fatalf("after reconcile %+v, before %+v", v, u)
		}
	})
}

// The guard's two halves, as nodes sharing a database run them: Heal (every
// node) repairs a ledger whose state was lost without flushing anything;
// Flush (the node holding the lease) writes the coalesced counts.
func TestGuardHealAndFlushSplit(t *testing.T) {
	r := testutil.StartRedis(t)
	e := newEnvWith(t, r.Client())
	ctx := context.Background()
	uid := e.user("pia", 10*testChunk)
	info, err := e.s.Init(ctx, uid, "/part", 2*testChunk, "")
	if err != nil {
		t.Fatal(err)
	}
	c := testutil.RandBytes(testChunk)
	if err := e.s.PutChunk(ctx, uid, info.UploadID, 0, testutil.MD5Hex(c), bytes.NewReader(c), -1); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Second)
	if !e.g.Heal(ctx) {
		t.Fatal("Heal of a healthy ledger reports it unusable")
	}
	if n := e.sqlUnfinished(uid); n != 0 {
		t.Fatalf("Heal flushed %d bytes: flushing is the lease holder's", n)
	}
	// Redis restarts empty: Heal alone rebuilds the ledger from the database.
	r.FlushAll()
	if _, err := e.d.QuotaOf(ctx, uid); err == nil {
		t.Fatal("usage answered from an emptied Redis")
	}
	if !e.g.Heal(ctx) {
		t.Fatal("Heal did not reconcile the lost ledger")
	}
	q, err := e.d.QuotaOf(ctx, uid)
	if err != nil || q.Uploading != 2*testChunk || q.Unfinished != testChunk {
		t.Fatalf("usage after Heal = %+v, %v; want the open session's", q, err)
	}
	if n := e.sqlUnfinished(uid); n != 0 {
		t.Fatalf("Heal flushed %d bytes", n)
	}
	e.g.Flush(ctx, e.clock.Now())
	if n := e.sqlUnfinished(uid); n != testChunk {
		t.Fatalf("database unfinished after Flush = %d, want %d", n, testChunk)
	}
}
