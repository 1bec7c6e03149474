package metatest

import (
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// Upload sessions, their chunks and challenges, and the quota flush records.

// session opens a session of uid for path and size, returning its id.
func (e *env) session(uid int64, id, path string, size int64, fileHash string) string {
	e.t.Helper()
	got, err := e.s.CreateSession(e.ctx, meta.Session{ID: id, UserID: uid, Path: path, Size: size, ChunkSize: 4, FileHash: fileHash, Replaces: 1},
		e.clock.Now().Add(-time.Hour), e.clock.Now())
	e.must(err)
	return got
}

func testSessions(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	id := e.session(a, "s1", "/f", 10, "")
	if id != "s1" {
		t.Fatalf("CreateSession = %q", id)
	}
	ss, err := e.s.Session(e.ctx, a, "s1")
	e.must(err)
	if ss.ID != "s1" || ss.UserID != a || ss.Path != "/f" || ss.Size != 10 || ss.ChunkSize != 4 || ss.State != meta.SessionOpen ||
		ss.Replaces != 1 || ss.Received != 0 || !ss.Touched.Equal(t0) {
		t.Fatalf("session %+v", ss)
	}
	_, err = e.s.Session(e.ctx, b, "s1")
	if !errors.Is(err, meta.ErrNoSession) || !errs.Is(err, errs.NotFound) {
		t.Fatalf("another user's session: %v, want ErrNoSession", err)
	}
	// A matching open session is resumed (and touched), not duplicated.
	e.clock.Advance(time.Minute)
	if got := e.session(a, "s2", "/f", 10, "hash"); got != "s1" {
		t.Fatalf("a second init made %q, want s1 resumed", got)
	}
	ss, _ = e.s.Session(e.ctx, a, "s1")
	if !ss.Touched.Equal(t0.Add(time.Minute)) || ss.FileHash != "hash" {
		t.Fatalf("resumed session %+v: touched and given the hash", ss)
	}
	if _, err := e.s.Session(e.ctx, a, "s2"); !errors.Is(err, meta.ErrNoSession) {
		t.Fatalf("the resumed init left a row: %v", err)
	}
	now := e.clock.Now()
	for _, c := range []struct {
		path      string
		size      int64
		hash      string
		notBefore time.Time
		want      string
	}{
		{"/f", 10, "", now.Add(-time.Hour), "s1"},
		{"/f", 10, "hash", now.Add(-time.Hour), "s1"},
		{"/f", 10, "other", now.Add(-time.Hour), ""},
		{"/f", 11, "", now.Add(-time.Hour), ""},
		{"/g", 10, "", now.Add(-time.Hour), ""},
		{"/f", 10, "", now.Add(time.Second), ""}, // idle too long
	} {
		got, err := e.s.ResumeSession(e.ctx, a, c.path, c.size, c.hash, c.notBefore, now)
		if err != nil || got != c.want {
			t.Fatalf("ResumeSession(%s, %d, %q) = %q, %v; want %q", c.path, c.size, c.hash, got, err, c.want)
		}
	}
	if got, _ := e.s.ResumeSession(e.ctx, b, "/f", 10, "", now.Add(-time.Hour), now); got != "" {
		t.Fatalf("bob resumed alice's session %q", got)
	}
}

func testSessionChunks(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.session(a, "s1", "/f", 10, "")
	c0, c1 := chunk("0", 4), chunk("1", 4)
	e.clock.Advance(time.Minute)
	e.must(e.s.AddSessionChunk(e.ctx, "s1", 1, c1, e.clock.Now()))
	e.must(e.s.AddSessionChunk(e.ctx, "s1", 0, c0, e.clock.Now()))
	e.must(e.s.AddSessionChunk(e.ctx, "s1", 0, c0, e.clock.Now())) // again: nothing changes
	ss, _ := e.s.Session(e.ctx, a, "s1")
	if ss.Received != 8 || !ss.Touched.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after two chunks %+v", ss)
	}
	err := e.s.AddSessionChunk(e.ctx, "s1", 0, chunk("other", 4), e.clock.Now())
	if !errors.Is(err, meta.ErrIndexTaken) || !errs.Is(err, errs.Conflict) {
		t.Fatalf("another chunk at a held index: %v", err)
	}
	err = e.s.AddSessionChunk(e.ctx, "nope", 0, c0, e.clock.Now())
	if !errors.Is(err, meta.ErrNoSession) || !errs.Is(err, errs.NotFound) {
		t.Fatalf("a chunk for no session: %v", err)
	}
	rec, err := e.s.ChunkBySHA256(e.ctx, c0.SHA256)
	e.must(err)
	err = e.s.AddSessionChunk(e.ctx, "s1", 2, meta.Chunk{ID: rec.ID + 1000, SHA256: "sha-gone", MD5: "x", Size: 2}, e.clock.Now())
	if !errors.Is(err, meta.ErrChunkGone) || !errs.Is(err, errs.NotFound) {
		t.Fatalf("a vanished chunk by id: %v", err)
	}
	// A chunk named by id is reused as it is.
	e.session(b, "s2", "/f", 4, "")
	e.must(e.s.AddSessionChunk(e.ctx, "s2", 0, rec, e.clock.Now()))
	held, err := e.s.SessionChunks(e.ctx, "s1")
	e.must(err)
	if len(held) != 2 || held[0].Index != 0 || held[0].SHA256 != c0.SHA256 || held[1].Index != 1 || held[1].SHA256 != c1.SHA256 {
		t.Fatalf("SessionChunks = %+v", held)
	}
	if c, ok, err := e.s.SessionChunkAt(e.ctx, "s1", 1); err != nil || !ok || c.SHA256 != c1.SHA256 {
		t.Fatalf("SessionChunkAt(1) = %+v %v %v", c, ok, err)
	}
	if _, ok, err := e.s.SessionChunkAt(e.ctx, "s1", 2); err != nil || ok {
		t.Fatalf("SessionChunkAt(2) = %v %v", ok, err)
	}
	// Session chunks are not garbage; they count as the user's for instant upload.
	if un, _ := e.s.UnreferencedChunks(e.ctx, 10); len(un) != 0 {
		t.Fatalf("session chunks listed as garbage: %+v", un)
	}
	if ok, _ := e.s.DeleteChunkIfUnreferenced(e.ctx, c1.SHA256); ok {
		t.Fatal("a session's chunk deleted")
	}
	if hs, err := e.s.ChunksHeld(e.ctx, a, c1.MD5, c1.Size, 10); err != nil || len(hs) != 1 || !hs[0].Own || hs[0].Owners != 0 {
		t.Fatalf("ChunksHeld(alice) = %+v %v; want hers, no owner (sessions never own)", hs, err)
	}
	if hs, err := e.s.ChunksHeld(e.ctx, b, c1.MD5, c1.Size, 10); err != nil || len(hs) != 1 || hs[0].Own {
		t.Fatalf("ChunksHeld(bob) = %+v %v; want not his", hs, err)
	}
	open, err := e.s.OpenSessions(e.ctx)
	e.must(err)
	sort.Slice(open, func(i, j int) bool { return open[i].ID < open[j].ID })
	if len(open) != 2 || open[0].ID != "s1" || open[0].UserID != a || open[0].Size != 10 || open[0].Received != 8 ||
		fmt.Sprint(open[0].Held) != "[0 1]" || open[1].ID != "s2" || open[1].Received != 4 {
		t.Fatalf("OpenSessions = %+v", open)
	}
	if n, err := e.s.CountOpenSessions(e.ctx); err != nil || n != 2 {
		t.Fatalf("CountOpenSessions = %d %v, want 2", n, err)
	}
	// A user's own open sessions, newest first; a merged one is not open.
	e.clock.Advance(time.Minute)
	e.session(a, "s3", "/g", 4, "")
	mine, err := e.s.UserSessions(e.ctx, a)
	e.must(err)
	if len(mine) != 2 || mine[0].ID != "s3" || mine[0].Path != "/g" || !mine[0].Touched.Equal(e.clock.Now()) ||
		mine[1].ID != "s1" || mine[1].Received != 8 || mine[1].Size != 10 || mine[1].UserID != a {
		t.Fatalf("UserSessions(alice) = %+v", mine)
	}
	if his, err := e.s.UserSessions(e.ctx, b); err != nil || len(his) != 1 || his[0].ID != "s2" {
		t.Fatalf("UserSessions(bob) = %+v %v", his, err)
	}
	if none, err := e.s.UserSessions(e.ctx, a+b+100); err != nil || len(none) != 0 {
		t.Fatalf("UserSessions(nobody) = %+v %v", none, err)
	}
}

func testMergeSession(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.session(a, "s1", "/d/f", 8, "")
	cs := []meta.Chunk{chunk("0", 4), chunk("1", 4)}
	for i, c := range cs {
		e.must(e.s.AddSessionChunk(e.ctx, "s1", int64(i), c, e.clock.Now()))
	}
	held, _ := e.s.SessionChunks(e.ctx, "s1")
	f := file(t0, held[0].Chunk, held[1].Chunk)
	_, _, _, err := e.s.MergeSession(e.ctx, "s1", f, f.FileHash, e.clock.Now())
	wantKind(t, "merge without the parent", err, errs.NoParent)
	if ss, _ := e.s.Session(e.ctx, a, "s1"); ss.State != meta.SessionOpen {
		t.Fatalf("a failed merge closed the session: %+v", ss)
	}
	e.mkdir(a, "/d")
	// A file larger than the session declared grows usage past what it reserved.
	big := file(t0, chunk("x", 9))
	_, _, _, err = e.s.MergeSession(e.ctx, "s1", big, big.FileHash, e.clock.Now())
	wantKind(t, "merge past the declared size", err, errs.Quota)
	// Flushed unfinished bytes are settled in the merge.
	_, err = e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "s1", Seq: 1, Target: 8}})
	e.must(err)
	if e.unfinished(a) != 8 {
		t.Fatalf("unfinished after the flush %d", e.unfinished(a))
	}
	e.clock.Advance(time.Minute)
	n, growth, metaGrowth, err := e.s.MergeSession(e.ctx, "s1", f, f.FileHash, e.clock.Now())
	e.must(err)
	if metaGrowth != meta.EntryCharge("f") {
		t.Fatalf("a new file's merge charged %d for its entry, want %d", metaGrowth, meta.EntryCharge("f"))
	}
	if growth != 8 || n.Path != "/d/f" || n.Size != 8 || e.finished(a) != 8 || e.unfinished(a) != 0 {
		t.Fatalf("merged %+v growth %d, finished %d unfinished %d", n, growth, e.finished(a), e.unfinished(a))
	}
	ss, err := e.s.Session(e.ctx, a, "s1")
	e.must(err)
	if ss.State != meta.SessionMerged || ss.ResultHash != f.FileHash || ss.Received != 0 || !ss.Touched.Equal(e.clock.Now()) {
		t.Fatalf("merged session %+v", ss)
	}
	if fcs, _ := e.s.FileChunks(e.ctx, n.ID); len(fcs) != 2 {
		t.Fatalf("file chunks %+v", fcs)
	}
	_, _, _, err = e.s.MergeSession(e.ctx, "s1", f, f.FileHash, e.clock.Now())
	if !errors.Is(err, meta.ErrNoSession) || !errs.Is(err, errs.NotFound) {
		t.Fatalf("second merge: %v, want ErrNoSession", err)
	}
	if e.finished(a) != 8 {
		t.Fatalf("second merge counted twice: %d", e.finished(a))
	}
	err = e.s.AddSessionChunk(e.ctx, "s1", 0, cs[0], e.clock.Now())
	if !errors.Is(err, meta.ErrSessionClosed) || !errs.Is(err, errs.Conflict) {
		t.Fatalf("a chunk for a merged session: %v", err)
	}
	// A late flush of the merged upload is fenced out.
	_, err = e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "s1", Seq: 2, Target: 8}})
	e.must(err)
	if e.unfinished(a) != 0 {
		t.Fatalf("a late flush counted: %d", e.unfinished(a))
	}
	if open, _ := e.s.OpenSessions(e.ctx); len(open) != 0 {
		t.Fatalf("open after the merge %+v", open)
	}
	if n, err := e.s.CountOpenSessions(e.ctx); err != nil || n != 0 {
		t.Fatalf("CountOpenSessions after the merge = %d %v, want 0", n, err)
	}
	// Replacing a file grows usage by the difference only.
	e.session(a, "s2", "/d/f", 4, "")
	e.must(e.s.AddSessionChunk(e.ctx, "s2", 0, cs[0], e.clock.Now()))
	f2 := file(t0, cs[0])
	if _, growth, metaGrowth, err := e.s.MergeSession(e.ctx, "s2", f2, f2.FileHash, e.clock.Now()); err != nil || growth != -4 || metaGrowth != 0 || e.finished(a) != 4 {
		t.Fatalf("replacing merge growth %d (entry %d), %v, finished %d", growth, metaGrowth, err, e.finished(a))
	}
}

// testMergeFreeName: a merge asked to keep what is there commits at the
// first free numbered name, whether a file or a folder holds the name, and
// changes nothing already in the folder.
func testMergeFreeName(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.mkdir(a, "/d")
	old := e.commit(a, "/d/a.txt", chunk("old", 3))
	e.commit(a, "/d/a (2).txt", chunk("old2", 5))
	e.mkdir(a, "/d/b")
	merge := func(id, p string, c meta.Chunk) meta.Node {
		t.Helper()
		e.session(a, id, p, c.Size, "")
		e.must(e.s.AddSessionChunk(e.ctx, id, 0, c, e.clock.Now()))
		f := file(t0, c)
		f.FreeName = true
		n, growth, metaGrowth, err := e.s.MergeSession(e.ctx, id, f, f.FileHash, e.clock.Now())
		e.must(err)
		if growth != c.Size || metaGrowth != meta.EntryCharge(vpath.Base(n.Path)) {
			t.Fatalf("merge of %s at %s: growth %d, entry %d", p, n.Path, growth, metaGrowth)
		}
		return n
	}
	if n := merge("s1", "/d/a.txt", chunk("new", 4)); n.Path != "/d/a (3).txt" || n.Size != 4 {
		t.Fatalf("merged over two taken names: %+v, want /d/a (3).txt", n)
	}
	if n := merge("s2", "/d/b", chunk("b", 2)); n.Path != "/d/b (2)" || n.IsDir {
		t.Fatalf("merged at a folder's name: %+v, want the file /d/b (2)", n)
	}
	if n := merge("s3", "/d/c", chunk("c", 1)); n.Path != "/d/c" {
		t.Fatalf("merged at a free name: %+v", n)
	}
	if n := e.stat(a, "/d/a.txt"); n.ID != old.ID || n.Size != 3 || n.FileHash != old.FileHash {
		t.Fatalf("the taken file changed: %+v, was %+v", n, old)
	}
	if n := e.stat(a, "/d/b"); !n.IsDir {
		t.Fatalf("the folder changed: %+v", n)
	}
	if _, v, err := e.s.FileVersions(e.ctx, a, "/d/a.txt"); err != nil || len(v) != 0 {
		t.Fatalf("the taken file got versions %+v %v", v, err)
	}
	if e.finished(a) != 3+5+4+2+1 {
		t.Fatalf("finished %d", e.finished(a))
	}
}

func testDropAndExpire(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.session(a, "s1", "/f", 4, "")
	e.must(e.s.AddSessionChunk(e.ctx, "s1", 0, chunk("0", 4), e.clock.Now()))
	_, err := e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "s1", Seq: 1, Target: 4}})
	e.must(err)
	ss, found, err := e.s.DropSession(e.ctx, "s1", e.clock.Now())
	if err != nil || !found || ss.ID != "s1" || ss.State != meta.SessionOpen || ss.UserID != a {
		t.Fatalf("DropSession = %+v %v %v", ss, found, err)
	}
	if e.unfinished(a) != 0 {
		t.Fatalf("drop did not settle: unfinished %d", e.unfinished(a))
	}
	if un, _ := e.s.UnreferencedChunks(e.ctx, 10); len(un) != 1 {
		t.Fatalf("a dropped session's chunk is garbage: %+v", un)
	}
	if _, found, err := e.s.DropSession(e.ctx, "s1", e.clock.Now()); err != nil || found {
		t.Fatalf("second drop = %v %v", found, err)
	}
	// Expiry: open sessions idle past one cut, merged ones past another.
	e.session(a, "old", "/old", 0, "")
	e.session(a, "merged", "/m", 0, "")
	_, _, _, err = e.s.MergeSession(e.ctx, "merged", file(t0), "", e.clock.Now())
	e.must(err)
	e.clock.Advance(time.Hour)
	e.session(a, "fresh", "/fresh", 0, "")
	openCut, mergedCut := e.clock.Now().Add(-30*time.Minute), e.clock.Now().Add(-2*time.Hour)
	ids, err := e.s.IdleSessions(e.ctx, openCut, mergedCut, 10)
	e.must(err)
	if !same(ids, []string{"old"}) {
		t.Fatalf("IdleSessions = %v, want [old]", ids)
	}
	if _, dropped, err := e.s.DropIdleSession(e.ctx, "fresh", openCut, mergedCut, e.clock.Now()); err != nil || dropped {
		t.Fatalf("a fresh session dropped: %v %v", dropped, err)
	}
	if ss, dropped, err := e.s.DropIdleSession(e.ctx, "old", openCut, mergedCut, e.clock.Now()); err != nil || !dropped || ss.ID != "old" {
		t.Fatalf("DropIdleSession(old) = %+v %v %v", ss, dropped, err)
	}
	mergedCut = e.clock.Now()
	ids, _ = e.s.IdleSessions(e.ctx, openCut, mergedCut, 10)
	if !same(ids, []string{"merged"}) {
		t.Fatalf("IdleSessions after the retention = %v", ids)
	}
	if _, dropped, err := e.s.DropIdleSession(e.ctx, "merged", openCut, mergedCut, e.clock.Now()); err != nil || !dropped {
		t.Fatalf("DropIdleSession(merged) = %v %v", dropped, err)
	}
	if _, err := e.s.Stat(e.ctx, a, "/m"); err != nil {
		t.Fatalf("retiring a merged session removed its file: %v", err)
	}
	// Deleting the user takes their sessions.
	e.must(e.s.DeleteUser(e.ctx, a))
	if open, _ := e.s.OpenSessions(e.ctx); len(open) != 0 {
		t.Fatalf("sessions of a deleted user %+v", open)
	}
}

func testChallenges(t *testing.T, e *env) {
	a := e.user("alice", 0)
	e.session(a, "s1", "/f", 4, "")
	ch := meta.Challenge{Index: -1, Nonce: "n1", Proof: "p1", Target: `{"t":1}`, Expires: t0.Add(time.Minute)}
	e.must(e.s.PutChallenge(e.ctx, "s1", ch))
	ch.Nonce, ch.Proof = "n2", "p2" // a new challenge at the same index replaces the old
	e.must(e.s.PutChallenge(e.ctx, "s1", ch))
	got, ok, err := e.s.TakeChallenge(e.ctx, "s1", -1)
	if err != nil || !ok || got.Nonce != "n2" || got.Proof != "p2" || got.Target != ch.Target || !got.Expires.Equal(ch.Expires) || got.Index != -1 {
		t.Fatalf("TakeChallenge = %+v %v %v", got, ok, err)
	}
	if _, ok, err := e.s.TakeChallenge(e.ctx, "s1", -1); err != nil || ok {
		t.Fatalf("a challenge taken twice: %v %v", ok, err)
	}
	e.must(e.s.PutChallenge(e.ctx, "s1", meta.Challenge{Index: 0, Nonce: "a", Proof: "b", Target: "c", Expires: t0}))
	e.must(e.s.PutChallenge(e.ctx, "s1", meta.Challenge{Index: 1, Nonce: "a", Proof: "b", Target: "c", Expires: t0.Add(time.Hour)}))
	if n, err := e.s.DeleteExpiredChallenges(e.ctx, t0.Add(time.Minute)); err != nil || n != 1 {
		t.Fatalf("DeleteExpiredChallenges = %d %v", n, err)
	}
	if _, ok, _ := e.s.TakeChallenge(e.ctx, "s1", 1); !ok {
		t.Fatal("an unexpired challenge was deleted")
	}
	// Challenges go with their session.
	e.must(e.s.PutChallenge(e.ctx, "s1", meta.Challenge{Index: 2, Nonce: "a", Proof: "b", Target: "c", Expires: t0.Add(time.Hour)}))
	_, _, err = e.s.DropSession(e.ctx, "s1", e.clock.Now())
	e.must(err)
	if _, ok, _ := e.s.TakeChallenge(e.ctx, "s1", 2); ok {
		t.Fatal("a dropped session's challenge survived")
	}
}

func testQuotaFlushes(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	writes, err := e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{
		{User: a, Upload: "u1", Seq: 1, Target: 10},
		{User: b, Upload: "u2", Seq: 1, Target: 5},
	})
	if err != nil || writes != 2 || e.unfinished(a) != 10 || e.unfinished(b) != 5 {
		t.Fatalf("flush: writes %d %v, unfinished %d %d", writes, err, e.unfinished(a), e.unfinished(b))
	}
	// A newer flush moves by the difference; a stale or repeated one is ignored.
	writes, err = e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{
		{User: a, Upload: "u1", Seq: 3, Target: 14},
		{User: a, Upload: "u1", Seq: 2, Target: 99},
		{User: b, Upload: "u2", Seq: 1, Target: 50},
	})
	if err != nil || writes != 1 || e.unfinished(a) != 14 || e.unfinished(b) != 5 {
		t.Fatalf("second flush: writes %d %v, unfinished %d %d", writes, err, e.unfinished(a), e.unfinished(b))
	}
	// A deleted user's flush counts nowhere.
	e.must(e.s.DeleteUser(e.ctx, b))
	if writes, err := e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: b, Upload: "u3", Seq: 1, Target: 5}}); err != nil || writes != 0 {
		t.Fatalf("flush of a deleted user: %d %v", writes, err)
	}
	// Repair settles uploads that are not open and recomputes unfinished
	// from the open ones.
	_, err = e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "u4", Seq: 1, Target: 6}})
	e.must(err)
	recs, err := e.s.RepairQuotaFlushes(e.ctx, map[string]bool{"u4": true}, e.clock.Now())
	e.must(err)
	if len(recs) != 1 || recs["u4"] != (meta.QuotaRecord{Seq: 1, Flushed: 6}) || e.unfinished(a) != 6 {
		t.Fatalf("Repair = %+v, unfinished %d", recs, e.unfinished(a))
	}
	// The settled record fences later flushes out until it is pruned.
	if writes, _ := e.s.ApplyQuotaFlushes(e.ctx, []meta.QuotaFlush{{User: a, Upload: "u1", Seq: 9, Target: 20}}); writes != 0 || e.unfinished(a) != 6 {
		t.Fatalf("a flush after the settlement counted: %d, unfinished %d", writes, e.unfinished(a))
	}
	if n, err := e.s.PruneQuotaFlushes(e.ctx, e.clock.Now()); err != nil || n != 0 {
		t.Fatalf("prune before the cut = %d %v", n, err)
	}
	e.clock.Advance(time.Hour)
	if n, err := e.s.PruneQuotaFlushes(e.ctx, e.clock.Now()); err != nil || n != 1 {
		t.Fatalf("prune after the cut = %d %v, want the one tombstone", n, err)
	}
	if recs, _ := e.s.RepairQuotaFlushes(e.ctx, map[string]bool{"u4": true}, e.clock.Now()); len(recs) != 1 {
		t.Fatalf("prune removed an open record: %+v", recs)
	}
}

func testStats(t *testing.T, e *env) {
	a, b := e.user("alice", 0), e.user("bob", 0)
	e.mkdir(a, "/d")
	e.commit(a, "/d/f", chunk("x", 3), chunk("y", 4))
	e.commit(b, "/g", chunk("x", 3))
	st, err := e.s.Stats(e.ctx)
	e.must(err)
	want := meta.Stats{Users: 2, Files: 2, Dirs: 3, LogicalBytes: 10, PhysicalBytes: 7, Chunks: 2}
	if st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
}
