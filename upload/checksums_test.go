package upload

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"time"

	"netdisk/testutil"
)

// A merged upload's content checksums are unknown at the merge (the server
// never saw the bytes in order) and filled by the drive's background pass,
// which the merge wakes.
func TestMergeGetsChecksumsFromThePass(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	uid := e.user("carol", 0)
	done := make(chan int)
	go e.d.RunChecksums(ctx, time.Hour, done)
	if n := <-done; n != 0 { // the pass at start: nothing pending yet
		t.Fatalf("first pass filled %d", n)
	}
	b := testutil.RandBytes(3*testChunk + 9)
	if _, err := e.upload(uid, "/m.bin", b); err != nil {
		t.Fatal(err)
	}
	if n := <-done; n != 1 { // woken by the merge: the timer is an hour away
		t.Fatalf("pass after the merge filled %d, want 1", n)
	}
	st, err := e.d.Stat(ctx, uid, "/m.bin")
	s := sha1.Sum(b)
	if err != nil || st.MD5 != testutil.MD5Hex(b) || st.SHA1 != hex.EncodeToString(s[:]) {
		t.Fatalf("after the pass: %+v %v", st, err)
	}
}
