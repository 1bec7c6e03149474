package api_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"testing"

	"netdisk/apitype"
	"netdisk/chunker"
	"netdisk/testutil"
)

func sha256hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// fileSHA is b's chunker.FileSHA256 cut at the daemon's chunk size.
func fileSHA(b []byte) string {
	var hs []string
	for i := int64(0); i*cs < int64(len(b)); i++ {
		hs = append(hs, sha256hex(chunkAt(b, i)))
	}
	return chunker.FileSHA256(hs)
}

// protoPush uploads b to path over the chunked protocol as a client does:
// init (resuming what the server offers), patchHash on the file, then on
// each chunk not held yet (a challenge is answered over b, a refused proof
// or "exists": false sends the bytes), and merge. With sha it names the
// content by SHA-256 too (the extension); without, it is the seed's
// MD5-only client. A merge refused with 422 (a resumed session holding
// other bytes) abandons the session and starts once more from scratch.
func (x *tester) protoPush(user, path string, b []byte, sha bool) {
	x.t.Helper()
	for attempt := 0; ; attempt++ {
		in := x.init(user, path, int64(len(b)))
		file := map[string]any{"uploadId": in.UploadID, "fileHash": fileHash(b)}
		if sha {
			file["fileSha256"] = fileSHA(b)
		}
		var pa apitype.PatchHashResult
		if st := x.call(user, "POST", "/api/v1/file/patchHash", file, &pa); st != 200 {
			x.t.Fatalf("patchHash file: %d", st)
		}
		if pa.Completed {
			return
		}
		if pa.Challenge != nil {
			var pr apitype.ProveResult
			x.call(user, "POST", "/api/v1/file/prove", map[string]any{"uploadId": in.UploadID, "nonce": pa.Challenge.Nonce, "proof": proof(pa.Challenge.Nonce, b, pa.Challenge.Ranges)}, &pr)
			if pr.OK && pr.Completed {
				return
			}
		}
		for i := int64(0); i < in.TotalChunks; i++ {
			if slices.Contains(in.Uploaded, i) {
				continue
			}
			c := chunkAt(b, i)
			q := map[string]any{"uploadId": in.UploadID, "index": i, "hash": testutil.MD5Hex(c)}
			if sha {
				q["sha256"] = sha256hex(c)
			}
			pa = apitype.PatchHashResult{}
			if st := x.call(user, "POST", "/api/v1/file/patchHash", q, &pa); st != 200 {
				x.t.Fatalf("patchHash chunk %d: %d", i, st)
			}
			if pa.Exists && pa.Challenge == nil {
				continue
			}
			if pa.Challenge != nil {
				var pr apitype.ProveResult
				x.call(user, "POST", "/api/v1/file/prove", map[string]any{"uploadId": in.UploadID, "index": i, "nonce": pa.Challenge.Nonce, "proof": proof(pa.Challenge.Nonce, c, pa.Challenge.Ranges)}, &pr)
				if pr.OK {
					continue
				}
			}
			if st := x.put(user, in.UploadID, b, i); st != 200 {
				x.t.Fatalf("chunk %d: %d", i, st)
			}
		}
		m := map[string]any{"uploadId": in.UploadID, "fileHash": fileHash(b)}
		if sha {
			m["fileSha256"] = fileSHA(b)
		}
		st := x.call(user, "POST", "/api/v1/file/merge", m, nil)
		if st == http.StatusUnprocessableEntity && attempt == 0 {
			x.call(user, "DELETE", "/api/v1/file/session?uploadId="+in.UploadID, nil, nil)
			continue
		}
		if st != 200 {
			x.t.Fatalf("merge: %d", st)
		}
		return
	}
}

// An MD5 match never binds other bytes. A = a‖S and B = b‖S (the collision
// pair of testdata/md5collision) have the same size, chunk MD5s and file
// hash. Whoever holds B (the uploader, another user in shared mode, enough
// other users in private mode), an upload of A through every route of the
// API reads back as A: patchHash and prove on the file and on chunks, with
// and without the SHA-256 extension, a session resumed with B's chunks, and
// the one-request upload with fileHash (and fileSha256). Only the bytes, or a
// SHA-256 the server checks against its own, decide what is stored.
func TestMD5CollisionNeverSubstitutes(t *testing.T) {
	for _, mode := range [][]string{{"--instant-upload=shared"}, {"--instant-upload=private", "--instant-upload-owners=2"}} {
		t.Run(mode[0], func(t *testing.T) {
			x := start(t, mode...)
			for _, u := range []string{"alice", "bob", "carol"} {
				x.addUser(u, 0)
			}
			// A fresh pair for each case, so no case finds content an
			// earlier one stored. Two chunks and a bit: the first collides,
			// the others are equal.
			pair := func() (A, B []byte) {
				A, B = testutil.MD5CollidingContents(t, 2*cs+99-128)
				if fileHash(A) != fileHash(B) || fileSHA(A) == fileSHA(B) {
					t.Fatal("A and B must share the file hash and differ in SHA-256")
				}
				return A, B
			}
			check := func(user, path string, want []byte) {
				t.Helper()
				got, _ := x.get(user, path)
				switch {
				case bytes.Equal(got, want):
				case len(got) == len(want) && bytes.Equal(got[128:], want[128:]):
					t.Errorf("%s's %s holds the other file of the collision pair: content substituted on an MD5 match", user, path)
				default:
					t.Errorf("%s's %s differs from what was sent", user, path)
				}
			}
			// push sends A as user after the holders stored B; with
			// whole false, A gets one more chunk (another file hash, so
			// only the first chunk's MD5 is shared with B).
			push := func(user, path string, holders []string, whole, sha bool) {
				t.Helper()
				A, B := pair()
				for _, h := range holders {
					x.sendAll(h, fmt.Sprintf("/b-%x.bin", B[128:136]), B)
				}
				if !whole {
					A = append(A, testutil.RandBytes(cs)...)
				}
				x.protoPush(user, path, A, sha)
				check(user, path, A)
			}
			for _, sha := range []bool{true, false} {
				for _, whole := range []bool{true, false} {
					// Others hold B: bob and carol, enough owners for private's threshold.
					push("alice", fmt.Sprintf("/others-%v-%v.bin", sha, whole), []string{"bob", "carol"}, whole, sha)
					// Alice holds B herself.
					push("alice", fmt.Sprintf("/own-%v-%v.bin", sha, whole), []string{"alice"}, whole, sha)
				}
			}
			A, B := pair()

			// A session of B, interrupted after its first chunk, is resumed
			// by an upload of A to the same path and size.
			in := x.init("alice", "/resumed.bin", int64(len(B)))
			if st := x.put("alice", in.UploadID, B, 0); st != 200 {
				t.Fatalf("B's chunk 0: %d", st)
			}
			x.protoPush("alice", "/resumed.bin", A, true)
			check("alice", "/resumed.bin", A)
			// The same with a client that does not check the first chunk's
			// bytes but names the file: its patchHash on the held index
			// answers by SHA-256 too.
			in = x.init("alice", "/resumed2.bin", int64(len(B)))
			x.put("alice", in.UploadID, B, 0)
			var pa apitype.PatchHashResult
			x.call("alice", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "index": 0, "hash": testutil.MD5Hex(chunkAt(A, 0))}, &pa)
			if pa.Exists {
				t.Errorf("patchHash by MD5 alone on a held index = %+v, want exists false (send the bytes)", pa)
			}
			if st := x.call("alice", "PUT", chunkURL(in.UploadID, 0, testutil.MD5Hex(chunkAt(A, 0))), chunkAt(A, 0), nil); st != http.StatusConflict {
				t.Errorf("A's chunk 0 on an index holding B's: %d, want 409", st)
			}
			st := x.call("alice", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "index": 0, "hash": testutil.MD5Hex(chunkAt(A, 0)), "sha256": sha256hex(chunkAt(A, 0))}, nil)
			if st != http.StatusConflict {
				t.Errorf("patchHash naming A's chunk on an index holding B's: %d, want 409", st)
			}

			// The one-request upload: alice holds B (a small file too),
			// not A.
			A, B = pair()
			x.sendAll("alice", "/b.bin", B)
			for _, q := range []string{
				"fileHash=" + fileHash(A) + "&fileSha256=" + fileSHA(A),
				"fileHash=" + fileHash(A),
			} {
				var r apitype.FileResult
				if st := x.call("alice", "PUT", "/api/v1/file/upload?path=/small.bin&"+q, A, &r); st != 200 {
					t.Fatalf("upload?%s: %d", q, st)
				}
				if r.Instant {
					t.Errorf("upload?%s of A answered instant: alice holds only B", q)
				}
				check("alice", "/small.bin", A)
			}
			// Her own B still instant when named by its SHA-256.
			var r apitype.FileResult
			x.call("alice", "PUT", "/api/v1/file/upload?path=/small-b.bin&fileHash="+fileHash(B)+"&fileSha256="+fileSHA(B), B, &r)
			if !r.Instant {
				t.Error("upload of B named by fileSha256 was not instant: alice holds B")
			}
			check("alice", "/small-b.bin", B)

			// WebDAV PUT: the server hashes the bytes itself.
			if st := x.call("alice", "PUT", "/dav/dav.bin", A, nil); st != http.StatusCreated {
				t.Fatalf("PUT /dav/dav.bin: %d", st)
			}
			check("alice", "/dav.bin", A)
			check("alice", "/b.bin", B)
		})
	}
}

// Content named by SHA-256 stays instant: the user's own at once, another
// user's after a proof (shared mode), for the file and for each chunk.
func TestInstantWithSHA256(t *testing.T) {
	x := start(t, "--instant-upload=shared")
	x.addUser("alice", 0)
	x.addUser("bob", 0)
	b := testutil.RandBytes(2*cs + 99)
	x.sendAll("alice", "/orig.bin", b)
	chunks := x.stats()
	for _, user := range []string{"alice", "bob"} {
		in := x.init(user, "/copy.bin", int64(len(b)))
		for i := int64(0); i < in.TotalChunks; i++ {
			var pa apitype.PatchHashResult
			x.call(user, "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "index": i, "hash": testutil.MD5Hex(chunkAt(b, i)), "sha256": sha256hex(chunkAt(b, i))}, &pa)
			if !pa.Exists || (user == "alice") != (pa.Challenge == nil) {
				t.Fatalf("%s: patchHash chunk %d = %+v", user, i, pa)
			}
		}
		var pa apitype.PatchHashResult
		x.call(user, "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "fileHash": fileHash(b), "fileSha256": fileSHA(b)}, &pa)
		if !pa.Exists || (user == "alice") != (pa.Challenge == nil) || (user == "alice") != pa.Completed {
			t.Fatalf("%s: patchHash file = %+v", user, pa)
		}
		x.call(user, "DELETE", "/api/v1/file/session?uploadId="+in.UploadID, nil, nil)
		x.protoPush(user, "/copy.bin", b, true)
		if got, _ := x.get(user, "/copy.bin"); !bytes.Equal(got, b) {
			t.Fatalf("%s's copy differs", user)
		}
	}
	if now := x.stats(); now != chunks {
		t.Fatalf("chunks %d -> %d: content named by SHA-256 was sent again", chunks, now)
	}
	// A malformed sha256 is refused.
	in := x.init("bob", "/bad.bin", int64(len(b)))
	if st := x.call("bob", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "index": 0, "hash": testutil.MD5Hex(chunkAt(b, 0)), "sha256": "XYZ"}, nil); st != 400 {
		t.Fatalf("malformed sha256: %d, want 400", st)
	}
}
