package metatest

import (
	"testing"

	"netdisk/meta"
)

// testLookups checks instant upload's two lookups: who holds a file content
// or a chunk (own, distinct owners up to a limit, sessions never owners) and
// the content's secret draw (fixed once, in range, different per content).
func testLookups(t *testing.T, e *env) {
	a, b, c := e.user("alice", 0), e.user("bob", 0), e.user("carol", 0)
	fa := e.commit(a, "/a", chunk("x", 3))
	id, h, found, err := e.s.FileHeld(e.ctx, b, fa.FileHash, 3, 10)
	if err != nil || !found || h.Own || id != fa.ID || h.Owners != 1 {
		t.Fatalf("another user's file: id %d %+v found %v %v", id, h, found, err)
	}
	if h.Draw < 0 || h.Draw >= meta.DrawRange {
		t.Fatalf("draw %d out of [0, %d)", h.Draw, meta.DrawRange)
	}
	draw := h.Draw
	fb := e.commit(b, "/b", chunk("x", 3))
	e.commit(b, "/b2", chunk("x", 3)) // a second copy is not a second owner
	id, h, found, err = e.s.FileHeld(e.ctx, b, fa.FileHash, 3, 10)
	if err != nil || !found || !h.Own || id != fb.ID || h.Owners != 2 || h.Draw != draw {
		t.Fatalf("the user's own file first: id %d %+v found %v %v (draw was %d)", id, h, found, err, draw)
	}
	if _, h, _, _ := e.s.FileHeld(e.ctx, c, fa.FileHash, 3, 1); h.Owners != 1 {
		t.Fatalf("owners counted past the limit: %+v", h)
	}
	if _, _, found, err := e.s.FileHeld(e.ctx, c, fa.FileHash, 4, 10); err != nil || found {
		t.Fatalf("another size matched: %v %v", found, err)
	}
	if _, h, found, err := e.s.FileHeld(e.ctx, c, "none", 3, 10); err != nil || found || h != (meta.Holders{}) {
		t.Fatalf("an unknown hash matched: %+v %v %v", h, found, err)
	}
	// The draw outlives the content: it comes back with the same threshold.
	e.must(e.s.Remove(e.ctx, a, "/a"))
	e.must(e.s.Remove(e.ctx, b, "/b"))
	e.must(e.s.Remove(e.ctx, b, "/b2"))
	if _, _, found, _ := e.s.FileHeld(e.ctx, c, fa.FileHash, 3, 10); found {
		t.Fatal("a removed file still found")
	}
	e.commit(c, "/c", chunk("x", 3))
	if _, h, _, _ := e.s.FileHeld(e.ctx, a, fa.FileHash, 3, 10); h.Draw != draw || h.Owners != 1 {
		t.Fatalf("content back: %+v, want draw %d and one owner", h, draw)
	}

	// Chunks: owners are distinct users of files; sessions make a user's
	// own content but never an owner.
	y := chunk("y", 5)
	e.commit(a, "/y1", y)
	e.commit(a, "/y2", y)
	hs, err := e.s.ChunksHeld(e.ctx, c, y.MD5, 5, 10)
	if err != nil || len(hs) != 1 || hs[0].Own || hs[0].Owners != 1 || hs[0].SHA256 != y.SHA256 || hs[0].ID == 0 {
		t.Fatalf("ChunksHeld = %+v %v", hs, err)
	}
	cdraw := hs[0].Draw
	if cdraw < 0 || cdraw >= meta.DrawRange {
		t.Fatalf("chunk draw %d out of range", cdraw)
	}
	e.session(b, "sb", "/up", 5, "")
	e.must(e.s.AddSessionChunk(e.ctx, "sb", 0, y, e.clock.Now()))
	hs, _ = e.s.ChunksHeld(e.ctx, b, y.MD5, 5, 10)
	if len(hs) != 1 || !hs[0].Own || hs[0].Owners != 1 || hs[0].Draw != cdraw {
		t.Fatalf("bob's session: %+v, want his own, still one owner, same draw", hs)
	}
	e.commit(b, "/y", y)
	if hs, _ = e.s.ChunksHeld(e.ctx, c, y.MD5, 5, 10); hs[0].Owners != 2 {
		t.Fatalf("two users' files: %+v", hs)
	}
	if hs, _ = e.s.ChunksHeld(e.ctx, c, y.MD5, 5, 1); hs[0].Owners != 1 {
		t.Fatalf("owners counted past the limit: %+v", hs)
	}
	if hs, err := e.s.ChunksHeld(e.ctx, c, y.MD5, 6, 10); err != nil || len(hs) != 0 {
		t.Fatalf("another size matched: %+v %v", hs, err)
	}
	if hs, err := e.s.ChunksHeld(e.ctx, c, "md5-none", 5, 10); err != nil || len(hs) != 0 {
		t.Fatalf("an unknown MD5 matched: %+v %v", hs, err)
	}
	// Two chunks sharing an MD5 are both returned (the caller refuses to pick).
	e.commit(c, "/twin", meta.Chunk{SHA256: "sha-twin", MD5: y.MD5, Size: 5})
	if hs, _ = e.s.ChunksHeld(e.ctx, a, y.MD5, 5, 10); len(hs) != 2 {
		t.Fatalf("MD5 twins: %+v", hs)
	}

	// Draws are random per content, not a constant.
	seen := map[int64]bool{}
	for i := range 8 {
		k := chunk(string(rune('k'+i)), 7)
		e.commit(a, "/k"+string(rune('0'+i)), k)
		hs, _ := e.s.ChunksHeld(e.ctx, a, k.MD5, 7, 10)
		_, fh, _, _ := e.s.FileHeld(e.ctx, a, k.MD5, 7, 10)
		seen[hs[0].Draw], seen[fh.Draw] = true, true
	}
	if len(seen) < 12 { // 16 draws from 2^31 values: a repeat is a bug, not luck
		t.Fatalf("only %d distinct draws over 16 contents", len(seen))
	}
}
