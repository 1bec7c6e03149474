package e2e

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"

	"netdisk/testutil"
)

// A chunked upload's MKCOL reserves the total it announces, as an upload
// session does: another upload, or a PUT, that cannot fit beside it is
// refused while it is open, and its DELETE gives the space back.
func TestNextcloudUploadReservesAtMKCOL(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.setQuota("alice", 20<<20)
	total := func(n int) map[string]string {
		return map[string]string{"OC-Total-Length": strconv.Itoa(n), "Destination": e.d.URL + "/remote.php/dav/files/alice/f.bin"}
	}
	if st := e.status("MKCOL", "/remote.php/dav/uploads/alice/1", "alice", "alice-pw", total(12<<20)); st != http.StatusCreated {
		t.Fatalf("MKCOL of a 12 MiB upload: %d", st)
	}
	if st := e.status("MKCOL", "/remote.php/dav/uploads/alice/2", "alice", "alice-pw", total(12<<20)); st != http.StatusInsufficientStorage {
		t.Fatalf("MKCOL of a second 12 MiB upload beside the first (20 MiB quota): %d, want 507", st)
	}
	if st, _, _ := e.call("PUT", "/dav/other.bin", "alice", "alice-pw", make([]byte, 10<<20), nil); st != http.StatusInsufficientStorage {
		t.Fatalf("PUT of 10 MiB beside the 12 MiB upload: %d, want 507", st)
	}
	if st := e.status("MKCOL", "/remote.php/dav/uploads/alice/1", "alice", "alice-pw", total(12<<20)); st/100 == 2 {
		t.Fatalf("MKCOL of an upload that exists: %d", st)
	}
	if st := e.status("DELETE", "/remote.php/dav/uploads/alice/1", "alice", "alice-pw", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE of the upload: %d", st)
	}
	if st := e.status("MKCOL", "/remote.php/dav/uploads/alice/2", "alice", "alice-pw", total(12<<20)); st != http.StatusCreated {
		t.Fatalf("MKCOL of 12 MiB once the first upload is deleted: %d", st)
	}
}

// Two nodes behind one address (any node may get any request): an upload
// begun on one is listed, continued and assembled on the other, because
// its parts live in the shared stores, not on a node's disk.
func TestNextcloudUploadAcrossNodes(t *testing.T) {
	c := startCluster(t) // chunks of 64 KiB
	data := testutil.RandBytes(300_000)
	sum := sha1.Sum(data)
	up := "/remote.php/dav/uploads/admin/99"
	hdr := func(d *testutil.Daemon) map[string]string {
		return map[string]string{"OC-Total-Length": strconv.Itoa(len(data)), "Destination": d.URL + "/remote.php/dav/files/admin/big.bin"}
	}
	if a := ask(t, c.a, "MKCOL", up, nil, hdr(c.a)); a.code != http.StatusCreated {
		t.Fatalf("MKCOL on a: %d %s", a.code, a.body)
	}
	// Parts of 100,000 bytes: every one straddles a chunk boundary.
	for i, d := range []*testutil.Daemon{c.a, c.b, c.a} {
		name := strconv.Itoa(i * 100_000)
		if a := ask(t, d, "PUT", up+"/"+name, data[i*100_000:(i+1)*100_000], hdr(d)); a.code != http.StatusCreated {
			t.Fatalf("PUT part %s: %d %s", name, a.code, a.body)
		}
	}
	a := ask(t, c.b, "PROPFIND", up, nil, map[string]string{"Depth": "1"})
	if a.code != http.StatusMultiStatus || bytes.Count(a.body, []byte("<D:getcontentlength>100000</D:getcontentlength>")) != 3 {
		t.Fatalf("PROPFIND of the upload on b: %d %s", a.code, a.body)
	}
	move := hdr(c.b)
	move["OC-Checksum"] = "SHA1:" + hex.EncodeToString(sum[:])
	if a := ask(t, c.b, "MOVE", up+"/.file", nil, move); a.code != http.StatusCreated {
		t.Fatalf("MOVE .file on b: %d %s", a.code, a.body)
	}
	for _, d := range []*testutil.Daemon{c.a, c.b} {
		if a := ask(t, d, "GET", "/dav/big.bin", nil, nil); a.code != http.StatusOK || !bytes.Equal(a.body, data) {
			t.Fatalf("GET on %s: %d, %d bytes", d.URL, a.code, len(a.body))
		}
	}
	if a := ask(t, c.a, "PROPFIND", up, nil, map[string]string{"Depth": "1"}); a.code != http.StatusNotFound {
		t.Fatalf("the upload after its assembly, on a: %d", a.code)
	}
}
