package api_test

import (
	"testing"
)

// A chunk once received is final: the same bytes again are a no-op (200),
// other bytes for that index (correctly hashed) are refused (409) and the
// session, the file and the accounting stay as they were.
func TestReceivedChunkCannotBeReplaced(t *testing.T) {
	x := start(t)
	x.addUser("ann", 0)
	b := randBytes(2*cs + 100)
	in := x.init("ann", "/f.bin", int64(len(b)))
	if st := x.put("ann", in.UploadID, b, 0); st != 200 {
		t.Fatalf("chunk 0: %d", st)
	}
	held := x.unfinished("ann")
	if st := x.put("ann", in.UploadID, b, 0); st != 200 {
		t.Fatalf("same chunk again: %d, want 200", st)
	}
	other := randBytes(cs)
	if st := x.call("ann", "PUT", chunkURL(in.UploadID, 0, md5hex(other)), other, nil); st != 409 {
		t.Fatalf("other bytes for a received index: %d, want 409", st)
	}
	// patchHash naming other content for that index is refused the same way.
	if st := x.call("ann", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "index": 0, "hash": md5hex(other)}, nil); st != 409 {
		t.Fatalf("patchHash of other content for a received index: %d, want 409", st)
	}
	if got := x.unfinished("ann"); got != held {
		t.Fatalf("unfinished moved from %d to %d", held, got)
	}
	for i := int64(1); i < in.TotalChunks; i++ {
		if st := x.put("ann", in.UploadID, b, i); st != 200 {
			t.Fatalf("chunk %d: %d", i, st)
		}
	}
	var r result
	if st := x.merge("ann", in.UploadID, fileHash(b), &r); st != 200 {
		t.Fatalf("merge: %d", st)
	}
	got, _ := x.get("ann", "/f.bin")
	if string(got) != string(b) {
		t.Fatal("the file is not the first bytes sent")
	}
}

// merge refuses a file hash other than the one init was given (422); with
// none at init, the merge's hash decides.
func TestMergeHashMustMatchInit(t *testing.T) {
	x := start(t)
	x.addUser("ann", 0)
	a, b := randBytes(cs+10), randBytes(cs+10)
	var in info
	if st := x.call("ann", "POST", "/api/v1/file/init", map[string]any{"path": "/a", "size": len(a), "fileHash": fileHash(a)}, &in); st != 200 {
		t.Fatalf("init: %d", st)
	}
	// The chunks are b's: all present, and b's hash matches them, but init
	// promised a's.
	for i := int64(0); i < in.TotalChunks; i++ {
		if st := x.put("ann", in.UploadID, b, i); st != 200 {
			t.Fatalf("chunk %d: %d", i, st)
		}
	}
	if st := x.merge("ann", in.UploadID, fileHash(b), nil); st != 422 {
		t.Fatalf("merge with another hash than init's: %d, want 422", st)
	}
	if st := x.call("ann", "GET", "/api/v1/file/session?uploadId="+in.UploadID, nil, nil); st != 200 {
		t.Fatalf("the session should still be open: %d", st)
	}
	// Without a hash at init, the merge's (checked against the chunks) is fine.
	r := x.sendAll("ann", "/b", b)
	if r.FileHash != fileHash(b) {
		t.Fatalf("merge without init hash: %+v", r)
	}
}
