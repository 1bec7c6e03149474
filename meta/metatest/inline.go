package metatest

import (
	"testing"

	"netdisk/errs"
)

// testInlineChunks: a chunk committed with its bytes (Chunk.Data) keeps them
// in the store with its record; an existing record keeps its bytes where
// they are; the bytes go when GC deletes the record.
func testInlineChunks(t *testing.T, e *env) {
	a := e.user("alice", 0)
	b := e.user("bob", 0)
	data := func(sha string) ([]byte, bool) {
		t.Helper()
		d, ok, err := e.s.ChunkData(e.ctx, sha)
		e.must(err)
		return d, ok
	}
	in := chunk("i", 3)
	in.Data = []byte("abc")
	e.commit(a, "/small", in)
	if d, ok := data("sha-i"); !ok || string(d) != "abc" {
		t.Fatalf("ChunkData of an inline chunk = %q, %v", d, ok)
	}
	// The same content committed by another user is the same record.
	e.commit(b, "/copy", in)
	if st, err := e.s.Stats(e.ctx); err != nil || st.Chunks != 1 {
		t.Fatalf("two users' inline chunk: %+v, %v; want one record", st, err)
	}
	// A chunk recorded without bytes (a blob) is not inline, and stays so
	// when a later commit offers bytes for it.
	e.commit(a, "/blob", chunk("b", 2))
	withData := chunk("b", 2)
	withData.Data = []byte("xy")
	e.commit(a, "/blob2", withData)
	if _, ok := data("sha-b"); ok {
		t.Fatal("a blob chunk became inline")
	}
	if _, ok := data("sha-none"); ok {
		t.Fatal("ChunkData of no chunk found something")
	}
	// Bytes that do not match the recorded size are refused; nothing commits.
	bad := chunk("bad", 5)
	bad.Data = []byte("abc")
	_, err := e.s.CommitFile(e.ctx, a, "/bad", file(t0, bad))
	wantKind(t, "inline bytes of the wrong size", err, errs.Invalid)
	if _, err := e.s.Stat(e.ctx, a, "/bad"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a refused commit is visible: %v", err)
	}
	if _, err := e.s.ChunkBySHA256(e.ctx, "sha-bad"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a refused commit left a chunk record: %v", err)
	}
	// GC: the bytes go with the record, and only once nothing holds it.
	e.must(e.s.Remove(e.ctx, a, "/small"))
	if ok, err := e.s.DeleteChunkIfUnreferenced(e.ctx, "sha-i"); err != nil || ok {
		t.Fatalf("deleted an inline chunk bob still holds: %v %v", ok, err)
	}
	e.must(e.s.Remove(e.ctx, b, "/copy"))
	if ok, err := e.s.DeleteChunkIfUnreferenced(e.ctx, "sha-i"); err != nil || ok {
		t.Fatalf("deleted an inline chunk the trash still holds: %v %v", ok, err)
	}
	e.must2(e.s.EmptyTrash(e.ctx, a))
	e.must2(e.s.EmptyTrash(e.ctx, b))
	if ok, err := e.s.DeleteChunkIfUnreferenced(e.ctx, "sha-i"); err != nil || !ok {
		t.Fatalf("DeleteChunkIfUnreferenced = %v %v", ok, err)
	}
	if _, ok := data("sha-i"); ok {
		t.Fatal("the inline bytes outlived their record")
	}
	// A new commit of the content stores its bytes again.
	e.commit(b, "/again", in)
	if d, ok := data("sha-i"); !ok || string(d) != "abc" {
		t.Fatalf("ChunkData after re-commit = %q, %v", d, ok)
	}
}
