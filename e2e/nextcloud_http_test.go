package e2e

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"netdisk/testutil"
)

// status.php and the OCS endpoints the sync clients read, in the shapes
// they parse (JSON with format=json, XML otherwise; v1 says 100, v2 200).
func TestNextcloudStatusAndOCS(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	st, b, _ := e.call("GET", "/status.php", "", "", nil, nil)
	var status map[string]any
	if st != http.StatusOK || json.Unmarshal(b, &status) != nil || status["installed"] != true || status["maintenance"] != false ||
		status["productname"] != "netdisk" || status["versionstring"] == nil {
		t.Fatalf("status.php: %d %s", st, b)
	}
	if st := e.status("GET", "/ocs/v1.php/cloud/capabilities?format=json", "", "", nil); st != http.StatusUnauthorized {
		t.Fatalf("capabilities without credentials: %d", st)
	}

	st, b, _ = e.call("GET", "/ocs/v1.php/cloud/capabilities?format=json", "alice", "alice-pw", nil, nil)
	var caps struct {
		OCS struct {
			Meta struct{ StatusCode int }
			Data struct {
				Capabilities struct {
					Core      struct{ PollInterval int }
					DAV       struct{ Chunking string }
					Checksums struct {
						SupportedTypes      []string
						PreferredUploadType string
					}
					Files struct{ BigFileChunking, Undelete, Versioning bool }
				}
			}
		}
	}
	if st != http.StatusOK || json.Unmarshal(b, &caps) != nil {
		t.Fatalf("capabilities v1: %d %s", st, b)
	}
	c := caps.OCS.Data.Capabilities
	if caps.OCS.Meta.StatusCode != 100 || c.DAV.Chunking != "1.0" || strings.Join(c.Checksums.SupportedTypes, ",") != "SHA1,MD5" ||
		c.Checksums.PreferredUploadType != "SHA1" || !c.Files.BigFileChunking || !c.Files.Undelete || !c.Files.Versioning || c.Core.PollInterval <= 0 {
		t.Fatalf("capabilities v1: %s", b)
	}
	st, b, _ = e.call("GET", "/ocs/v2.php/cloud/capabilities", "alice", "alice-pw", nil, nil)
	var x struct {
		XMLName    xml.Name `xml:"ocs"`
		StatusCode int      `xml:"meta>statuscode"`
		Chunking   string   `xml:"data>capabilities>dav>chunking"`
		Types      []string `xml:"data>capabilities>checksums>supportedTypes>element"`
	}
	if st != http.StatusOK || xml.Unmarshal(b, &x) != nil || x.StatusCode != 200 || x.Chunking != "1.0" || strings.Join(x.Types, ",") != "SHA1,MD5" {
		t.Fatalf("capabilities v2 in XML: %d %s", st, b)
	}

	e.put("alice", "alice-pw", "/dav/f", make([]byte, 1000))
	var user struct {
		OCS struct {
			Data struct {
				ID          string
				DisplayName string `json:"display-name"`
				Quota       struct{ Free, Used, Total, Quota int64 }
			}
		}
	}
	st, b, _ = e.call("GET", "/ocs/v2.php/cloud/user?format=json", "alice", "alice-pw", nil, nil)
	if st != http.StatusOK || json.Unmarshal(b, &user) != nil || user.OCS.Data.ID != "alice" || user.OCS.Data.DisplayName != "alice" ||
		user.OCS.Data.Quota.Quota != -3 || user.OCS.Data.Quota.Used < 1000 {
		t.Fatalf("cloud/user, no quota: %d %s", st, b)
	}
	e.setQuota("alice", 1<<20)
	st, b, _ = e.call("GET", "/ocs/v1.php/cloud/user?format=json", "alice", "alice-pw", nil, nil)
	q := &user.OCS.Data.Quota
	if st != http.StatusOK || json.Unmarshal(b, &user) != nil || q.Quota != 1<<20 || q.Used < 1000 || q.Free+q.Used != 1<<20 || q.Total != 1<<20 {
		t.Fatalf("cloud/user, 1 MiB quota: %d %s", st, b)
	}
}

// setQuota sets a user's quota through the admin API.
func (e *env) setQuota(name string, quota int64) {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"quota": quota})
	st, msg, _ := e.call("PUT", "/api/v1/admin/users/"+name+"/quota", "admin", e.d.AdminPass, body,
		map[string]string{"Content-Type": "application/json"})
	if st/100 != 2 {
		e.t.Fatalf("set the quota of %s: %d %s", name, st, msg)
	}
}

// The drive under the clients' paths: the same files as /dav/, only the
// owner's, with the ownCloud properties and headers; a folder's ETag
// changes with anything below it and only then.
func TestNextcloudDAV(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.addUser("bob", "bob-pw")
	e.mkcol("alice", "alice-pw", "/remote.php/dav/files/alice/a")
	e.mkcol("alice", "alice-pw", "/remote.php/webdav/a/b")
	e.mkcol("alice", "alice-pw", "/dav/side")
	st, _, hd := e.call("PUT", "/remote.php/dav/files/alice/a/b/f.txt", "alice", "alice-pw", []byte("hello"), map[string]string{"X-OC-Mtime": "1700000000"})
	if st != http.StatusCreated || hd.Get("OC-FileId") == "" || hd.Get("OC-ETag") == "" || hd.Get("X-OC-MTime") != "accepted" {
		t.Fatalf("PUT: %d %v", st, hd)
	}
	fileID := hd.Get("OC-FileId")
	e.mustGet("alice", "alice-pw", "/dav/a/b/f.txt", []byte("hello"))
	e.mustGet("alice", "alice-pw", "/remote.php/webdav/a/b/f.txt", []byte("hello"))
	for _, p := range []string{"/remote.php/dav/files/bob/", "/remote.php/dav/files/bob/a/b/f.txt", "/remote.php/dav/files/nobody/"} {
		if st := e.status("PROPFIND", p, "alice", "alice-pw", map[string]string{"Depth": "0"}); st != http.StatusNotFound {
			t.Fatalf("PROPFIND %s as alice: %d", p, st)
		}
	}

	props := `<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:prop>` +
		`<d:getetag/><oc:fileid/><oc:id/><oc:permissions/><oc:size/><oc:checksums/><oc:data-fingerprint/><nc:has-preview/></d:prop></d:propfind>`
	prop := func(p, name string) string {
		t.Helper()
		st, b, _ := e.call("PROPFIND", p, "alice", "alice-pw", []byte(props), map[string]string{"Depth": "0"})
		if st != http.StatusMultiStatus {
			t.Fatalf("PROPFIND %s: %d %s", p, st, b)
		}
		m := regexp.MustCompile(`<(?:D:)?` + name + `( [^>]*)?>([^<]*)<`).FindSubmatch(b)
		if m == nil {
			t.Fatalf("PROPFIND %s: no %s in %s", p, name, b)
		}
		return string(m[2])
	}
	id := prop("/remote.php/dav/files/alice/a/b/f.txt", "fileid")
	if got := prop("/remote.php/dav/files/alice/a/b/f.txt", "id"); got != fileID || !strings.HasPrefix(got, strings.Repeat("0", 8-len(id))+id) {
		t.Fatalf("oc:id %q, OC-FileId %q, oc:fileid %q", got, fileID, id)
	}
	if p := prop("/remote.php/dav/files/alice/a/b/f.txt", "permissions"); p != "RGDNVW" {
		t.Fatalf("a file's oc:permissions %q", p)
	}
	if p := prop("/remote.php/dav/files/alice/a", "permissions"); p != "RGDNVCK" {
		t.Fatalf("a folder's oc:permissions %q", p)
	}
	e.put("alice", "alice-pw", "/dav/a/g", make([]byte, 100))
	if s := prop("/remote.php/dav/files/alice/a", "size"); s != "105" {
		t.Fatalf("a folder's oc:size %s, want 105", s)
	}
	if s := prop("/remote.php/dav/files/alice/a/b/f.txt", "checksum"); !strings.Contains(s, "SHA1:aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d") {
		t.Fatalf("oc:checksums %q", s)
	}
	if s := prop("/remote.php/dav/files/alice/a/b/f.txt", "has-preview"); s != "false" {
		t.Fatalf("nc:has-preview %q", s)
	}

	// A change deep down changes every folder's ETag up to the root, and
	// no other's.
	tags := func() map[string]string {
		m := map[string]string{}
		for _, p := range []string{"/", "/a", "/a/b", "/side"} {
			m[p] = prop("/remote.php/dav/files/alice"+p, "getetag")
		}
		return m
	}
	before := tags()
	e.put("alice", "alice-pw", "/dav/a/b/f.txt", []byte("hello again"))
	after := tags()
	for p, changed := range map[string]bool{"/": true, "/a": true, "/a/b": true, "/side": false} {
		if (before[p] != after[p]) != changed {
			t.Errorf("after a change in /a/b the ETag of %s went %s → %s", p, before[p], after[p])
		}
	}
	if again := tags(); again["/"] != after["/"] {
		t.Fatalf("the root's ETag moved with nothing changed: %s → %s", after["/"], again["/"])
	}

	// The id follows the file through a rename and a move of its folder.
	st, _, hd = e.call("MOVE", "/remote.php/dav/files/alice/a/b", "alice", "alice-pw", nil,
		map[string]string{"Destination": e.d.URL + "/remote.php/dav/files/alice/side/moved"})
	if st != http.StatusCreated || hd.Get("OC-FileId") == "" {
		t.Fatalf("MOVE: %d %v", st, hd)
	}
	if got := prop("/remote.php/dav/files/alice/side/moved/f.txt", "fileid"); got != id {
		t.Fatalf("oc:fileid after the move %s, before %s", got, id)
	}

	// OC-Checksum is checked: a body that does not match is refused and
	// nothing is stored.
	if st := e.status("PUT", "/remote.php/dav/files/alice/bad.txt", "alice", "alice-pw",
		map[string]string{"OC-Checksum": "SHA1:0000000000000000000000000000000000000000"}); st/100 == 2 {
		t.Fatalf("PUT with a wrong OC-Checksum: %d", st)
	}
	if st := e.status("GET", "/dav/bad.txt", "alice", "alice-pw", nil); st != http.StatusNotFound {
		t.Fatalf("after a refused PUT: %d", st)
	}
}

// Chunked upload: the parts survive a restart and are listed, the MOVE
// assembles them into one file (checksum verified), a size the quota
// cannot hold is refused up front, DELETE gives up.
func TestNextcloudChunkedUpload(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	up := "/remote.php/dav/uploads/alice/4711"
	data := testutil.RandBytes(9<<20 + 123)
	sum := sha1.Sum(data)
	total := map[string]string{"OC-Total-Length": "9437307", "Destination": e.d.URL + "/remote.php/dav/files/alice/big.bin"}
	e.mkcol("alice", "alice-pw", up)
	if st := e.status("MKCOL", "/remote.php/dav/uploads/bob/1", "alice", "alice-pw", nil); st != http.StatusNotFound {
		t.Fatalf("MKCOL in another user's uploads: %d", st)
	}
	for _, part := range []struct {
		name     string
		from, to int
	}{{"0000000000000000", 0, 5 << 20}, {"0000000005242880", 5 << 20, len(data)}} {
		if st, b, _ := e.call("PUT", up+"/"+part.name, "alice", "alice-pw", data[part.from:part.to], total); st != http.StatusCreated {
			t.Fatalf("PUT part %s: %d %s", part.name, st, b)
		}
	}
	e.d.Restart()
	st, b, _ := e.call("PROPFIND", up, "alice", "alice-pw", nil, map[string]string{"Depth": "1"})
	if st != http.StatusMultiStatus || !bytes.Contains(b, []byte("/0000000005242880</D:href>")) ||
		!bytes.Contains(b, []byte("<D:getcontentlength>5242880</D:getcontentlength>")) {
		t.Fatalf("PROPFIND of the upload after a restart: %d %s", st, b)
	}
	bad := map[string]string{"OC-Checksum": "SHA1:" + strings.Repeat("0", 40)}
	for k, v := range total {
		bad[k] = v
	}
	if st := e.status("MOVE", up+"/.file", "alice", "alice-pw", bad); st/100 == 2 {
		t.Fatalf("MOVE with a wrong checksum: %d", st)
	}
	if st := e.status("GET", "/dav/big.bin", "alice", "alice-pw", nil); st != http.StatusNotFound {
		t.Fatalf("after a refused assembly: %d", st)
	}
	good := map[string]string{"OC-Checksum": "SHA1:" + hex.EncodeToString(sum[:]), "X-OC-Mtime": "1700000000"}
	for k, v := range total {
		good[k] = v
	}
	st, b, hd := e.call("MOVE", up+"/.file", "alice", "alice-pw", nil, good)
	if st != http.StatusCreated || hd.Get("OC-FileId") == "" || hd.Get("X-OC-MTime") != "accepted" {
		t.Fatalf("MOVE .file: %d %s %v", st, b, hd)
	}
	e.mustGet("alice", "alice-pw", "/dav/big.bin", data)
	if st := e.status("PROPFIND", up, "alice", "alice-pw", map[string]string{"Depth": "1"}); st != http.StatusNotFound {
		t.Fatalf("the upload after its assembly: %d", st)
	}

	// Over quota: refused at MKCOL and at a part, before the bytes.
	e.setQuota("alice", 12<<20)
	big := map[string]string{"OC-Total-Length": "5000000", "Destination": e.d.URL + "/remote.php/dav/files/alice/more.bin"}
	if st := e.status("MKCOL", "/remote.php/dav/uploads/alice/8", "alice", "alice-pw", big); st != http.StatusInsufficientStorage {
		t.Fatalf("MKCOL of an upload the quota cannot hold: %d", st)
	}
	e.mkcol("alice", "alice-pw", "/remote.php/dav/uploads/alice/8")
	if st, _, _ := e.call("PUT", "/remote.php/dav/uploads/alice/8/1", "alice", "alice-pw", []byte("x"), big); st != http.StatusInsufficientStorage {
		t.Fatalf("PUT of a part of an upload the quota cannot hold: %d", st)
	}
	// Without OC-Total-Length the parts together may not outgrow the
	// free quota either.
	if st, _, _ := e.call("PUT", "/remote.php/dav/uploads/alice/8/1", "alice", "alice-pw", make([]byte, 2<<20), nil); st != http.StatusCreated {
		t.Fatalf("PUT of a part that fits: %d", st)
	}
	if st, _, _ := e.call("PUT", "/remote.php/dav/uploads/alice/8/2", "alice", "alice-pw", make([]byte, 2<<20), nil); st != http.StatusInsufficientStorage {
		t.Fatalf("PUT of a part beyond the free quota: %d", st)
	}
	e.mkcol("alice", "alice-pw", "/remote.php/dav/uploads/alice/9")
	if st := e.status("DELETE", "/remote.php/dav/uploads/alice/9", "alice", "alice-pw", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE of an upload: %d", st)
	}
	if st := e.status("PUT", "/remote.php/dav/uploads/alice/9/1", "alice", "alice-pw", nil); st != http.StatusConflict {
		t.Fatalf("PUT into a deleted upload: %d", st)
	}
}

// The assembly is a write of its destination: a lock held on it refuses a
// MOVE that does not submit the token, and admits one that does.
func TestNextcloudChunkedUploadHonoursLocks(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.put("alice", "alice-pw", "/dav/f.bin", []byte("old"))
	st, b, hd := e.call("LOCK", "/dav/f.bin", "alice", "alice-pw",
		[]byte(`<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>`),
		map[string]string{"Timeout": "Second-600"})
	token := hd.Get("Lock-Token")
	if st != http.StatusOK || token == "" {
		t.Fatalf("LOCK: %d %s", st, b)
	}
	up := "/remote.php/dav/uploads/alice/77"
	e.mkcol("alice", "alice-pw", up)
	if st, b, _ := e.call("PUT", up+"/1", "alice", "alice-pw", []byte("new"), nil); st != http.StatusCreated {
		t.Fatalf("PUT part: %d %s", st, b)
	}
	dst := map[string]string{"Destination": e.d.URL + "/remote.php/dav/files/alice/f.bin"}
	if st := e.status("MOVE", up+"/.file", "alice", "alice-pw", dst); st != http.StatusLocked {
		t.Fatalf("MOVE .file onto a locked file without its token: %d", st)
	}
	e.mustGet("alice", "alice-pw", "/dav/f.bin", []byte("old"))
	dst["If"] = "(" + token + ")"
	if st, b, _ := e.call("MOVE", up+"/.file", "alice", "alice-pw", nil, dst); st != http.StatusNoContent {
		t.Fatalf("MOVE .file with the lock's token: %d %s", st, b)
	}
	e.mustGet("alice", "alice-pw", "/dav/f.bin", []byte("new"))
}
