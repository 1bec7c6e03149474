package upload

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"netdisk/errs"
)

// TestInitFreeNeverJoinsNorReplaces: two uploads of the same name and size
// into one folder get sessions of their own (Init would hand the second the
// first's session and its chunks), a name a file or a folder holds is
// skipped, and a merge whose path was taken meanwhile goes in beside it:
// nothing already there changes.
func TestInitFreeNeverJoinsNorReplaces(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.user("alice", 0)
	mine := bytes.Repeat([]byte("m"), 3*testChunk/2)
	if _, err := e.upload(a, "/drop/a.txt", mine); err != nil {
		t.Fatal(err)
	}
	if _, err := e.d.Mkdir(ctx, a, "/drop/b.txt"); err != nil {
		t.Fatal(err)
	}
	x := bytes.Repeat([]byte("x"), 3*testChunk/2)
	y := bytes.Repeat([]byte("y"), 3*testChunk/2)
	s1, err := e.s.InitFree(ctx, a, "/drop", "a.txt", int64(len(x)))
	if err != nil {
		t.Fatal(err)
	}
	e.putChunks(a, s1.UploadID, x, 0)
	s2, err := e.s.InitFree(ctx, a, "/drop", "a.txt", int64(len(y)))
	if err != nil {
		t.Fatal(err)
	}
	if s2.UploadID == s1.UploadID || len(s2.Uploaded) != 0 {
		t.Fatalf("the second upload joined the first: %+v %+v", s1, s2)
	}
	if s1.Path != "/drop/a (2).txt" || s2.Path != "/drop/a (3).txt" {
		t.Fatalf("paths %q %q", s1.Path, s2.Path)
	}
	if s3, err := e.s.InitFree(ctx, a, "/drop", "b.txt", 1); err != nil || s3.Path != "/drop/b (2).txt" {
		t.Fatalf("beside a folder: %+v %v", s3, err)
	}
	// The second session's path is taken before it merges.
	if _, err := e.upload(a, "/drop/a (3).txt", mine[:10]); err != nil {
		t.Fatal(err)
	}
	e.putChunks(a, s2.UploadID, y, 0, 1)
	res, err := e.s.MergeFree(ctx, a, s2.UploadID, fileHash(y, testChunk), fileSHA(y, testChunk))
	if err != nil || res.Path != "/drop/a (4).txt" {
		t.Fatalf("merge = %+v %v, want /drop/a (4).txt", res, err)
	}
	e.putChunks(a, s1.UploadID, x, 1)
	if res, err := e.s.MergeFree(ctx, a, s1.UploadID, fileHash(x, testChunk), ""); err != nil || res.Path != "/drop/a (2).txt" {
		t.Fatalf("merge = %+v %v", res, err)
	}
	for p, want := range map[string][]byte{"/drop/a.txt": mine, "/drop/a (2).txt": x, "/drop/a (3).txt": mine[:10], "/drop/a (4).txt": y} {
		if got := e.read(a, p); !bytes.Equal(got, want) {
			t.Errorf("%s holds %d bytes %.8q…", p, len(got), got)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b", "../x", "a\x00b", "a\nb", strings.Repeat("n", 256)} {
		if _, err := e.s.InitFree(ctx, a, "/drop", name, 1); !errs.Is(err, errs.Invalid) {
			t.Errorf("InitFree(%q) = %v, want Invalid", name, err)
		}
	}
}
