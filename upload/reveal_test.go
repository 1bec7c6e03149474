package upload

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"netdisk/dedup"
	"netdisk/meta"
	"netdisk/testutil"
)

// blobCount is how many chunk blobs the store holds.
func (e *env) blobCount() int {
	e.t.Helper()
	n := 0
	if err := e.blobs.Walk(context.Background(), func(dedup.Key) error { n++; return nil }); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// member adds a user straight to the store: these tests need many users and
// none of them logs in, so the password hash (slow by design) is skipped.
func (e *env) member(name string) int64 {
	e.t.Helper()
	u, err := e.m.CreateUser(context.Background(), name, "no-login", false, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	return u.ID
}

// proveOver answers a challenge over content b.
func proveOver(ch *Challenge, b []byte) string {
	var parts [][]byte
	for _, r := range ch.Ranges {
		parts = append(parts, b[r[0]:r[0]+r[1]])
	}
	return Proof(ch.Nonce, parts)
}

// push uploads b to path as the client pipeline does (file hash first, then
// per chunk: claim, prove, or send) and returns how many content bytes it
// sent and whether the server revealed the file (a challenge or own copy).
func (e *env) push(uid int64, path string, b []byte) (sent int64, revealed bool) {
	e.t.Helper()
	ctx := context.Background()
	info, err := e.s.Init(ctx, uid, path, int64(len(b)), "")
	if err != nil {
		e.t.Fatal(err)
	}
	fh := fileHash(b, testChunk)
	hr, err := e.s.PatchFile(ctx, uid, info.UploadID, fh, fileSHA(b, testChunk))
	if err != nil {
		e.t.Fatal(err)
	}
	if hr.Completed {
		return 0, true
	}
	if hr.Challenge != nil {
		pr, err := e.s.Prove(ctx, uid, info.UploadID, nil, hr.Challenge.Nonce, proveOver(hr.Challenge, b))
		if err != nil || !pr.OK || !pr.Completed {
			e.t.Fatalf("prove over the right bytes = %+v, %v", pr, err)
		}
		return 0, true
	}
	for i := int64(0); i < info.TotalChunks; i++ {
		c := chunkOf(b, i)
		hr, err := e.s.PatchChunk(ctx, uid, info.UploadID, i, testutil.MD5Hex(c), sha256hex(c))
		if err != nil {
			e.t.Fatal(err)
		}
		if hr.Exists && hr.Challenge == nil {
			continue
		}
		if hr.Challenge != nil {
			idx := i
			pr, err := e.s.Prove(ctx, uid, info.UploadID, &idx, hr.Challenge.Nonce, proveOver(hr.Challenge, c))
			if err != nil {
				e.t.Fatal(err)
			}
			if pr.OK {
				continue
			}
		}
		if err := e.s.PutChunk(ctx, uid, info.UploadID, i, testutil.MD5Hex(c), bytes.NewReader(c), int64(len(c))); err != nil {
			e.t.Fatal(err)
		}
		sent += int64(len(c))
	}
	if _, err := e.s.Merge(ctx, uid, info.UploadID, fh, fileSHA(b, testChunk)); err != nil {
		e.t.Fatal(err)
	}
	return sent, false
}

// probe asks patchHash, as uid in a fresh session, about content of b's
// size: the file hash of b, then each chunk's hash.
func (e *env) probe(uid int64, path string, b []byte) []HashResult {
	e.t.Helper()
	ctx := context.Background()
	info, err := e.s.Init(ctx, uid, path, int64(len(b)), "")
	if err != nil {
		e.t.Fatal(err)
	}
	defer e.s.Abort(ctx, uid, info.UploadID)
	hr, err := e.s.PatchFile(ctx, uid, info.UploadID, fileHash(b, testChunk), fileSHA(b, testChunk))
	if err != nil {
		e.t.Fatal(err)
	}
	out := []HashResult{hr}
	for i := int64(0); i < info.TotalChunks; i++ {
		hr, err := e.s.PatchChunk(ctx, uid, info.UploadID, i, testutil.MD5Hex(chunkOf(b, i)), sha256hex(chunkOf(b, i)))
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, hr)
	}
	return out
}

// thresholds returns the secret thresholds of b's file hash and of each of
// its chunks, as the service maps their stored draws.
func (e *env) thresholds(b []byte) (file int, chunks []int) {
	e.t.Helper()
	ctx := context.Background()
	_, h, found, err := e.m.FileHeld(ctx, 0, fileHash(b, testChunk), int64(len(b)), 1)
	if err != nil || !found {
		e.t.Fatalf("FileHeld: %v %v", found, err)
	}
	file = e.s.inst.threshold(h.Draw)
	for i := int64(0); i*testChunk < int64(len(b)); i++ {
		c := chunkOf(b, i)
		hs, err := e.m.ChunksHeld(ctx, 0, testutil.MD5Hex(c), int64(len(c)), 1)
		if err != nil || len(hs) != 1 {
			e.t.Fatalf("ChunksHeld: %+v %v", hs, err)
		}
		chunks = append(chunks, e.s.inst.threshold(hs[0].Draw))
	}
	return file, chunks
}

// Another user's unique file answers patchHash exactly as random content of
// the same size does, file and chunks alike; the user then sends the bytes
// and the store keeps one copy.
func TestOthersUniqueFileLooksUnknown(t *testing.T) {
	ledgers(t, func(t *testing.T, e *env) {
		alice, bob := e.member("alice"), e.member("bob")
		secret := testutil.RandBytes(3*testChunk + 17)
		if sent, _ := e.push(alice, "/letter.bin", secret); sent != int64(len(secret)) {
			t.Fatalf("alice sent %d bytes of new content, want %d", sent, len(secret))
		}
		blobs := e.blobCount()
		held := e.probe(bob, "/guess.bin", secret)
		unknown := e.probe(bob, "/guess.bin", testutil.RandBytes(len(secret)))
		if !slices.Equal(held, unknown) {
			t.Fatalf("held-but-hidden %+v, unknown %+v: the answers differ", held, unknown)
		}
		for _, hr := range held {
			if hr != (HashResult{}) {
				t.Fatalf("answer %+v, want exactly {exists: false}", hr)
			}
		}
		sent, revealed := e.push(bob, "/mine.bin", secret)
		if revealed || sent != int64(len(secret)) {
			t.Fatalf("bob sent %d bytes (revealed %v), want all %d", sent, revealed, len(secret))
		}
		if n := e.blobCount(); n != blobs {
			t.Fatalf("%d blobs after bob's upload, %d before: storage must keep one copy", n, blobs)
		}
		if !bytes.Equal(e.read(bob, "/mine.bin"), secret) {
			t.Fatal("bob's file differs")
		}
	})
}

// Content becomes instant for others exactly when its distinct owners reach
// its threshold (file and each chunk by their own), never below the range's
// minimum, always at its maximum; storage holds one copy throughout.
func TestInstantOnceCommonEnough(t *testing.T) {
	ledgers(t, func(t *testing.T, e *env) {
		b := testutil.RandBytes(2*testChunk + 5)
		first := e.member("u0")
		e.push(first, "/f", b)
		blobs := e.blobCount()
		tFile, tChunks := e.thresholds(b)
		for _, th := range append([]int{tFile}, tChunks...) {
			if th < DefaultMinOwners || th > DefaultMaxOwners {
				t.Fatalf("threshold %d outside %d-%d", th, DefaultMinOwners, DefaultMaxOwners)
			}
		}
		for owners := 1; owners <= DefaultMaxOwners; owners++ {
			u := e.user(fmt.Sprintf("u%d", owners), 0)
			got := e.probe(u, "/probe", b)
			for i, hr := range got {
				th := tFile
				if i > 0 {
					th = tChunks[i-1]
				}
				want := owners >= th
				if (hr.Challenge != nil) != want || hr.Completed || !want && hr != (HashResult{}) {
					t.Fatalf("%d owner(s), answer %d (threshold %d) = %+v; want revealed %v", owners, i, th, hr, want)
				}
			}
			sent, revealed := e.push(u, "/f", b)
			if revealed != (owners >= tFile) || revealed && sent != 0 {
				t.Fatalf("%d owner(s), threshold %d: revealed %v, sent %d", owners, tFile, revealed, sent)
			}
			if n := e.blobCount(); n != blobs {
				t.Fatalf("%d blobs with %d owners, %d at first", n, owners+1, blobs)
			}
			if !bytes.Equal(e.read(u, "/f"), b) {
				t.Fatalf("owner %d's file differs", owners+1)
			}
		}
	})
}

// A user's own content is instant in every mode, without a challenge: a file
// of theirs completes the upload, a chunk of one of their files or open
// sessions counts as uploaded.
func TestOwnContentStaysInstant(t *testing.T) {
	for _, mode := range []InstantMode{InstantPrivate, InstantShared, InstantOff} {
		t.Run(mode.String(), func(t *testing.T) {
			e := newEnvWith(t, nil, Instant{Mode: mode})
			ctx := context.Background()
			alice := e.member("alice")
			b := testutil.RandBytes(2*testChunk + 3)
			e.push(alice, "/a", b)
			if sent, revealed := e.push(alice, "/copy", b); !revealed || sent != 0 {
				t.Fatalf("own file: sent %d, revealed %v", sent, revealed)
			}
			// A chunk only in one of her open sessions.
			c := testutil.RandBytes(testChunk)
			open, _ := e.s.Init(ctx, alice, "/open", testChunk, "")
			if err := e.s.PutChunk(ctx, alice, open.UploadID, 0, testutil.MD5Hex(c), bytes.NewReader(c), -1); err != nil {
				t.Fatal(err)
			}
			other, _ := e.s.Init(ctx, alice, "/other", testChunk, "")
			hr, err := e.s.PatchChunk(ctx, alice, other.UploadID, 0, testutil.MD5Hex(c), sha256hex(c))
			if err != nil || !hr.Exists || hr.Challenge != nil {
				t.Fatalf("own session's chunk = %+v, %v; want exists, no challenge", hr, err)
			}
		})
	}
}

// The modes: shared reveals anyone's content at once (sessions included);
// off never reveals others' content however common; the
// default counts owners, and chunks of open sessions never count.
func TestInstantModes(t *testing.T) {
	ctx := context.Background()
	common := func(e *env, n int) []byte {
		b := testutil.RandBytes(testChunk + 9)
		for i := range n {
			e.push(e.user(fmt.Sprintf("owner%d", i), 0), "/c", b)
		}
		return b
	}
	// sessionOnly leaves a chunk in n users' open sessions.
	sessionOnly := func(e *env, n int) []byte {
		c := testutil.RandBytes(testChunk)
		for i := range n {
			u := e.user(fmt.Sprintf("sess%d", i), 0)
			info, _ := e.s.Init(ctx, u, "/s", testChunk, "")
			if err := e.s.PutChunk(ctx, u, info.UploadID, 0, testutil.MD5Hex(c), bytes.NewReader(c), -1); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	t.Run("shared", func(t *testing.T) {
		e := newEnvWith(t, nil, Instant{Mode: InstantShared})
		b := common(e, 1)
		for i, hr := range e.probe(e.member("bob"), "/p", b) {
			if hr.Challenge == nil {
				t.Fatalf("answer %d = %+v, want a challenge for one owner", i, hr)
			}
		}
		c := sessionOnly(e, 1)
		if hr := e.probe(e.member("carol"), "/p", c); hr[1].Challenge == nil {
			t.Fatalf("session chunk = %+v, want a challenge", hr[1])
		}
	})
	t.Run("off", func(t *testing.T) {
		e := newEnvWith(t, nil, Instant{Mode: InstantOff})
		b := common(e, DefaultMaxOwners+1)
		for i, hr := range e.probe(e.member("bob"), "/p", b) {
			if hr != (HashResult{}) {
				t.Fatalf("answer %d = %+v, want exists=false however common", i, hr)
			}
		}
	})
	t.Run("private", func(t *testing.T) {
		e := newEnvWith(t, nil, Instant{Mode: InstantPrivate, MinOwners: 3, MaxOwners: 3})
		b := common(e, 2)
		for i, hr := range e.probe(e.member("bob"), "/p", b) {
			if hr != (HashResult{}) {
				t.Fatalf("2 owners, threshold 3: answer %d = %+v", i, hr)
			}
		}
		c := sessionOnly(e, 5)
		if hr := e.probe(e.member("carol"), "/p", c); hr[1] != (HashResult{}) {
			t.Fatalf("a chunk in 5 open sessions = %+v, want exists=false (sessions never own)", hr[1])
		}
		e.push(e.member("third"), "/c", b)
		for i, hr := range e.probe(e.member("dave"), "/p", b) {
			if hr.Challenge == nil {
				t.Fatalf("3 owners, threshold 3: answer %d = %+v, want a challenge", i, hr)
			}
		}
	})
}

// timing measures n interleaved calls of a and b (alternating which goes
// first, so drift and caches hit both alike) and returns their medians.
func timing(n int, a, b func()) (ma, mb time.Duration) {
	da, db := make([]time.Duration, 0, n), make([]time.Duration, 0, n)
	run := func(f func(), into *[]time.Duration) {
		t0 := time.Now()
		f()
		*into = append(*into, time.Since(t0))
	}
	for i := range n {
		if i%2 == 0 {
			run(a, &da)
			run(b, &db)
		} else {
			run(b, &db)
			run(a, &da)
		}
	}
	slices.Sort(da)
	slices.Sort(db)
	return da[n/2], db[n/2]
}

// timingCase builds, in mode, another user's unique file and a session of
// bob's to ask about it, and returns patchHash calls on the file hash and a
// chunk hash of that content (held) and of random content (unknown).
func timingCase(t *testing.T, mode InstantMode) (fileHeld, fileUnknown, chunkHeld, chunkUnknown func()) {
	e := newEnvWith(t, nil, Instant{Mode: mode})
	ctx := context.Background()
	alice, bob := e.member("alice"), e.member("bob")
	secret, random := testutil.RandBytes(2*testChunk), testutil.RandBytes(2*testChunk)
	e.push(alice, "/secret", secret)
	info, err := e.s.Init(ctx, bob, "/probe", int64(len(secret)), "")
	if err != nil {
		t.Fatal(err)
	}
	call := func(f func() (HashResult, error)) func() {
		return func() {
			if _, err := f(); err != nil {
				t.Fatal(err)
			}
		}
	}
	file := func(b []byte) func() {
		fh, fs := fileHash(b, testChunk), fileSHA(b, testChunk)
		return call(func() (HashResult, error) { return e.s.PatchFile(ctx, bob, info.UploadID, fh, fs) })
	}
	chunk := func(b []byte) func() {
		h, sh := testutil.MD5Hex(chunkOf(b, 1)), sha256hex(chunkOf(b, 1))
		return call(func() (HashResult, error) { return e.s.PatchChunk(ctx, bob, info.UploadID, 1, h, sh) })
	}
	return file(secret), file(random), chunk(secret), chunk(random)
}

// near reports medians within 15% of each other: well above what the
// hidden and unknown paths differ by (a few percent: the same statement over
// one more index entry), well below what revealing costs (a challenge reads
// the content and writes a row: several times the lookup).
func near(a, b time.Duration) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= min(a, b)*15/100
}

// The time patchHash takes does not tell another user's content from
// unknown content. Medians of many interleaved calls are compared, in
// rounds: on a shared machine one round can be disturbed, so the private
// claim holds if any of several rounds finds them close, and the harness
// must see the difference that shared mode (which reveals) does make.
func TestPatchHashTimingIndependentOfExistence(t *testing.T) {
	const rounds, calls = 7, 301
	fh, fu, ch, cu := timingCase(t, InstantPrivate)
	fileOK, chunkOK := false, false
	for r := 0; r < rounds && !(fileOK && chunkOK); r++ {
		a, b := timing(calls, fh, fu)
		c, d := timing(calls, ch, cu)
		t.Logf("private, round %d: file held %v unknown %v; chunk held %v unknown %v", r, a, b, c, d)
		fileOK = fileOK || near(a, b)
		chunkOK = chunkOK || near(c, d)
	}
	if !fileOK || !chunkOK {
		t.Fatalf("in %d rounds, the medians never came within 15%%: file %v, chunk %v", rounds, fileOK, chunkOK)
	}
	// The control: revealing is measurable by the same harness.
	fh, fu, ch, cu = timingCase(t, InstantShared)
	fileSeen, chunkSeen := false, false
	for r := 0; r < rounds && !(fileSeen && chunkSeen); r++ {
		a, b := timing(calls, fh, fu)
		c, d := timing(calls, ch, cu)
		t.Logf("shared, round %d: file held %v unknown %v; chunk held %v unknown %v", r, a, b, c, d)
		fileSeen = fileSeen || a > b && !near(a, b)
		chunkSeen = chunkSeen || c > d && !near(c, d)
	}
	if !fileSeen || !chunkSeen {
		t.Fatalf("the harness saw no difference in shared mode (file %v, chunk %v): it could not see a leak either", fileSeen, chunkSeen)
	}
}

// Thresholds cover the whole range and nothing outside it; content without
// a draw gets the most cautious one; the flags' parsers accept what the
// docs show and refuse the rest.
func TestThresholdRangeAndParsing(t *testing.T) {
	c, err := Instant{MinOwners: 3, MaxOwners: 7}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for draw := int64(0); draw < 1000; draw++ {
		th := c.threshold(draw)
		if th < 3 || th > 7 {
			t.Fatalf("draw %d → threshold %d outside 3-7", draw, th)
		}
		seen[th] = true
	}
	if len(seen) != 5 || c.threshold(meta.NoDraw) != 7 || c.threshold(meta.DrawRange-1) > 7 {
		t.Fatalf("thresholds seen %v, no draw → %d", seen, c.threshold(meta.NoDraw))
	}
	if d, _ := (Instant{}).withDefaults(); d.MinOwners != DefaultMinOwners || d.MaxOwners != DefaultMaxOwners || d.Mode != InstantPrivate {
		t.Fatalf("zero value = %+v", d)
	}
	for in, want := range map[string][2]int{"2-10": {2, 10}, "4": {4, 4}, " 1 - 3 ": {1, 3}} {
		lo, hi, err := ParseOwnerRange(in)
		if err != nil || lo != want[0] || hi != want[1] {
			t.Fatalf("ParseOwnerRange(%q) = %d %d %v", in, lo, hi, err)
		}
	}
	for _, in := range []string{"", "0-3", "5-2", "-3", "2-x", "1-2-3"} {
		if _, _, err := ParseOwnerRange(in); err == nil {
			t.Fatalf("ParseOwnerRange(%q) accepted", in)
		}
	}
	for _, m := range []InstantMode{InstantPrivate, InstantShared, InstantOff} {
		if got, err := ParseInstantMode(m.String()); err != nil || got != m {
			t.Fatalf("ParseInstantMode(%q) = %v %v", m, got, err)
		}
	}
	if _, err := ParseInstantMode("public"); err == nil {
		t.Fatal("ParseInstantMode(public) accepted")
	}
	if (Instant{MinOwners: 0, MaxOwners: 4}).Check() == nil || (Instant{Mode: 7}).Check() == nil {
		t.Fatal("a bad configuration passed Check")
	}
}
