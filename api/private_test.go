package api_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"netdisk/testutil"
)

// By default (private), another user's unique file is indistinguishable over
// patchHash from content nobody holds: same status, same bytes, for the file
// hash and each chunk hash, on both ledgers. Bob then sends the bytes and the
// server keeps one copy; Alice's own copy stays instant.
func TestPatchHashHidesOthersContent(t *testing.T) {
	withLedgers(t, func(t *testing.T, x *tester, _ *testutil.Redis) {
		x.addUser("alice", 0)
		x.addUser("bob", 0)
		secret := testutil.RandBytes(2*cs + 7)
		x.sendAll("alice", "/salary.txt", secret)
		chunks := x.stats()
		ask := func(b []byte) (answers []string) {
			in := x.init("bob", "/probe.bin", int64(len(b)))
			defer x.call("bob", "DELETE", "/api/v1/file/session?uploadId="+in.UploadID, nil, nil)
			st, body := x.raw("bob", "POST", "/api/v1/file/patchHash", jsonBody(map[string]any{"uploadId": in.UploadID, "fileHash": fileHash(b), "fileSha256": fileSHA(b)}), 0, nil)
			if st != 200 {
				t.Fatalf("patchHash file: %d %s", st, body)
			}
			answers = append(answers, body)
			for i := int64(0); i < in.TotalChunks; i++ {
				st, body := x.raw("bob", "POST", "/api/v1/file/patchHash", jsonBody(map[string]any{"uploadId": in.UploadID, "index": i, "hash": testutil.MD5Hex(chunkAt(b, i)), "sha256": sha256hex(chunkAt(b, i))}), 0, nil)
				if st != 200 {
					t.Fatalf("patchHash chunk %d: %d %s", i, st, body)
				}
				answers = append(answers, body)
			}
			return answers
		}
		held, unknown := ask(secret), ask(testutil.RandBytes(len(secret)))
		for i := range held {
			if held[i] != unknown[i] {
				t.Fatalf("answer %d: held-but-hidden %q, unknown %q", i, held[i], unknown[i])
			}
			var a map[string]any
			if err := json.Unmarshal([]byte(held[i]), &a); err != nil || len(a) != 1 || a["exists"] != false {
				t.Fatalf("answer %d = %q, want {\"exists\": false}", i, held[i])
			}
		}
		x.sendAll("bob", "/mine.txt", secret)
		if got := x.stats(); got != chunks {
			t.Fatalf("%d chunks stored after bob's upload, %d before", got, chunks)
		}
		if got, _ := x.get("bob", "/mine.txt"); !bytes.Equal(got, secret) {
			t.Fatal("bob's copy differs")
		}
		in := x.init("alice", "/again.txt", int64(len(secret)))
		var pa struct {
			Exists, Completed bool
			Challenge         any
		}
		x.call("alice", "POST", "/api/v1/file/patchHash", map[string]any{"uploadId": in.UploadID, "fileHash": fileHash(secret), "fileSha256": fileSHA(secret)}, &pa)
		if !pa.Exists || !pa.Completed || pa.Challenge != nil {
			t.Fatalf("alice's own content: %+v, want completed without a challenge", pa)
		}
	})
}

func jsonBody(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
