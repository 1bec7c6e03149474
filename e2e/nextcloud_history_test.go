package e2e

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ncEntry is one response of the trashbin and versions views, as the
// Android library reads it (WebdavUtils.getTrashbinPropSet and
// getFileVersionPropSet).
type ncEntry struct {
	Href         string    `xml:"DAV: href"`
	Collection   *struct{} `xml:"DAV: propstat>prop>resourcetype>collection"`
	Length       string    `xml:"DAV: propstat>prop>getcontentlength"`
	LastModified string    `xml:"DAV: propstat>prop>getlastmodified"`
	ETag         string    `xml:"DAV: propstat>prop>getetag"`
	FileID       string    `xml:"http://owncloud.org/ns propstat>prop>fileid"`
	Size         string    `xml:"http://owncloud.org/ns propstat>prop>size"`
	Filename     string    `xml:"http://nextcloud.org/ns propstat>prop>trashbin-filename"`
	Location     string    `xml:"http://nextcloud.org/ns propstat>prop>trashbin-original-location"`
	Deleted      string    `xml:"http://nextcloud.org/ns propstat>prop>trashbin-deletion-time"`
}

// The request body the Android library sends for the trash.
const trashbinPropfind = `<?xml version="1.0" encoding="UTF-8"?>
<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"><d:prop>
<d:resourcetype/><d:getcontenttype/><d:getcontentlength/><oc:size/><oc:id/>
<nc:trashbin-filename/><nc:trashbin-original-location/><nc:trashbin-deletion-time/></d:prop></d:propfind>`

// ncList PROPFINDs a view and returns its responses.
func (e *env) ncList(user, pass, path, depth string) []ncEntry {
	e.t.Helper()
	st, body, _ := e.call("PROPFIND", path, user, pass, []byte(trashbinPropfind), map[string]string{"Depth": depth, "Content-Type": "application/xml"})
	if st != http.StatusMultiStatus {
		e.t.Fatalf("PROPFIND %s as %s: %d %.300s", path, user, st, body)
	}
	var ms struct {
		Responses []ncEntry `xml:"DAV: response"`
	}
	if err := xml.Unmarshal(body, &ms); err != nil {
		e.t.Fatalf("PROPFIND %s: %v\n%s", path, err, body)
	}
	return ms.Responses
}

// numericID is the numeric part of an OC-FileId header.
func numericID(t *testing.T, ocID string) string {
	t.Helper()
	id, ok := strings.CutSuffix(ocID, "ocnetdisk")
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || err != nil {
		t.Fatalf("OC-FileId %q", ocID)
	}
	return strconv.FormatInt(n, 10)
}

// The trash through the clients' trashbin view: listed with the Nextcloud
// properties (the name, where it was, when, the file id it had), read,
// restored by MOVE into restore/ (a taken name comes back "(restored)"),
// deleted item by item and emptied; only the owner's, whoever asks.
func TestNextcloudTrashbin(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.addUser("bob", "bob-pw")
	const files = "/remote.php/dav/files/alice"
	const bin = "/remote.php/dav/trashbin/alice"
	e.mkcol("alice", "alice-pw", files+"/docs")
	st, _, hd := e.call("PUT", files+"/docs/a.txt", "alice", "alice-pw", []byte("hello a"), nil)
	if st != http.StatusCreated {
		t.Fatalf("PUT: %d", st)
	}
	aID := numericID(t, hd.Get("OC-FileId"))
	e.mkcol("alice", "alice-pw", files+"/folder")
	e.put("alice", "alice-pw", files+"/folder/inner.txt", []byte("inside"))
	e.put("alice", "alice-pw", files+"/b.txt", []byte("bee"))
	before := time.Now().Add(-time.Minute).Unix()
	for _, p := range []string{"/docs/a.txt", "/folder", "/b.txt"} {
		if st := e.status("DELETE", files+p, "alice", "alice-pw", nil); st != http.StatusNoContent {
			t.Fatalf("DELETE %s: %d", p, st)
		}
	}

	if got := e.ncList("alice", "alice-pw", bin+"/trash/", "0"); len(got) != 1 || got[0].Href != bin+"/trash/" || got[0].Collection == nil {
		t.Fatalf("Depth 0: %+v", got)
	}
	list := e.ncList("alice", "alice-pw", bin+"/trash", "1")
	items := map[string]ncEntry{}
	for _, it := range list[1:] {
		items[it.Location] = it
	}
	a, folder := items["docs/a.txt"], items["folder"]
	if len(list) != 4 || list[0].Collection == nil || len(items) != 3 {
		t.Fatalf("listing: %+v", list)
	}
	del, _ := strconv.ParseInt(a.Deleted, 10, 64)
	if a.Filename != "a.txt" || a.Length != "7" || a.Size != "7" || a.FileID != aID || a.Collection != nil ||
		del < before || del > time.Now().Unix()+60 || !strings.HasPrefix(a.Href, bin+"/trash/a.txt.d") {
		t.Fatalf("a.txt's item: %+v (file id %s)", a, aID)
	}
	if folder.Collection == nil || folder.Filename != "folder" || folder.Size != "6" || !strings.HasSuffix(folder.Href, "/") {
		t.Fatalf("the folder's item: %+v", folder)
	}
	if one := e.ncList("alice", "alice-pw", a.Href, "0"); len(one) != 1 || one[0].Filename != "a.txt" {
		t.Fatalf("PROPFIND of one item: %+v", one)
	}

	// Reading: a file's bytes, as a download; a folder item has none.
	st, b, hd := e.call("GET", a.Href, "alice", "alice-pw", nil, nil)
	if st != http.StatusOK || string(b) != "hello a" || !strings.HasPrefix(hd.Get("Content-Disposition"), "attachment") {
		t.Fatalf("GET an item: %d %q %v", st, b, hd)
	}
	if st := e.status("GET", folder.Href, "alice", "alice-pw", nil); st != http.StatusMethodNotAllowed {
		t.Fatalf("GET a folder item: %d", st)
	}

	// Another user, whatever the path says: alice's trash is not there.
	id := strings.TrimPrefix(a.Href, bin+"/trash/a.txt.d")
	bobsView := "/remote.php/dav/trashbin/bob/trash/a.txt.d" + id
	for _, c := range []struct{ method, path string }{
		{"PROPFIND", bin + "/trash/"}, {"GET", a.Href}, {"DELETE", a.Href},
		{"GET", bobsView}, {"DELETE", bobsView}, {"PROPFIND", bobsView},
	} {
		if st := e.status(c.method, c.path, "bob", "bob-pw", map[string]string{"Depth": "1"}); st != http.StatusNotFound {
			t.Fatalf("bob: %s %s: %d", c.method, c.path, st)
		}
	}
	if st := e.status("MOVE", bobsView, "bob", "bob-pw", map[string]string{"Destination": "/remote.php/dav/trashbin/bob/restore/a.txt"}); st != http.StatusNotFound {
		t.Fatalf("bob restoring alice's item: %d", st)
	}
	if got := e.ncList("bob", "bob-pw", "/remote.php/dav/trashbin/bob/trash/", "1"); len(got) != 1 {
		t.Fatalf("bob's trash: %+v", got)
	}
	// The id with another name, or nothing like a name: no item.
	for _, p := range []string{bin + "/trash/other.txt.d" + id, bin + "/trash/a.txt", bin + "/trash/a.txt.dx", bin + "/nothing"} {
		if st := e.status("GET", p, "alice", "alice-pw", nil); st != http.StatusNotFound {
			t.Fatalf("GET %s: %d", p, st)
		}
	}

	// Restore: only into restore/; a taken path gives the free name.
	for _, dst := range []string{files + "/x.txt", "/remote.php/dav/trashbin/bob/restore/a.txt", bin + "/trash/y"} {
		if st := e.status("MOVE", a.Href, "alice", "alice-pw", map[string]string{"Destination": dst}); st != http.StatusForbidden {
			t.Fatalf("MOVE to %s: %d", dst, st)
		}
	}
	e.put("alice", "alice-pw", files+"/docs/a.txt", []byte("new a"))
	st, _, hd = e.call("MOVE", a.Href, "alice", "alice-pw", nil, map[string]string{"Destination": e.d.URL + bin + "/restore/a.txt"})
	if st != http.StatusCreated || numericID(t, hd.Get("OC-FileId")) != aID {
		t.Fatalf("restore: %d %v", st, hd)
	}
	e.mustGet("alice", "alice-pw", "/dav/docs/a (restored).txt", []byte("hello a"))
	e.mustGet("alice", "alice-pw", "/dav/docs/a.txt", []byte("new a"))
	if st := e.status("MOVE", folder.Href, "alice", "alice-pw", map[string]string{"Destination": bin + "/restore/folder"}); st != http.StatusCreated {
		t.Fatalf("restore the folder: %d", st)
	}
	e.mustGet("alice", "alice-pw", "/dav/folder/inner.txt", []byte("inside"))
	if st := e.status("GET", a.Href, "alice", "alice-pw", nil); st != http.StatusNotFound {
		t.Fatalf("a restored item: %d", st)
	}

	// Delete forever: one item, then the whole trash.
	e.put("alice", "alice-pw", files+"/c.txt", []byte("sea"))
	if st := e.status("DELETE", files+"/c.txt", "alice", "alice-pw", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE c.txt: %d", st)
	}
	list = e.ncList("alice", "alice-pw", bin+"/trash/", "1")
	if len(list) != 3 {
		t.Fatalf("two items left: %+v", list)
	}
	if st := e.status("DELETE", list[1].Href, "alice", "alice-pw", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE an item: %d", st)
	}
	if got := e.ncList("alice", "alice-pw", bin+"/trash/", "1"); len(got) != 2 || got[1].Href != list[2].Href {
		t.Fatalf("after deleting %s: %+v", list[1].Href, got)
	}
	if st := e.status("DELETE", bin+"/trash/", "alice", "alice-pw", nil); st != http.StatusNoContent {
		t.Fatalf("empty the trash: %d", st)
	}
	if got := e.ncList("alice", "alice-pw", bin+"/trash/", "1"); len(got) != 1 {
		t.Fatalf("an emptied trash: %+v", got)
	}
}

// A file's versions through the clients' versions view: named by their
// modification time, the value of getlastmodified (the Android app
// restores by that name); read; restored by MOVE into restore/ (the
// replaced content becomes a version); deleted; reached only through the
// owner's own file ids.
func TestNextcloudVersionsView(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.addUser("bob", "bob-pw")
	const files = "/remote.php/dav/files/alice"
	put := func(body string, mtime int64) string {
		t.Helper()
		st, msg, hd := e.call("PUT", files+"/v.txt", "alice", "alice-pw", []byte(body), map[string]string{"X-OC-Mtime": strconv.FormatInt(mtime, 10)})
		if st/100 != 2 {
			t.Fatalf("PUT %q: %d %s", body, st, msg)
		}
		return numericID(t, hd.Get("OC-FileId"))
	}
	id := put("one", 1700000000)
	put("two!", 1700000100)
	put("three", 1700000200)
	base := "/remote.php/dav/versions/alice/versions/" + id
	vs := e.ncList("alice", "alice-pw", base, "1")
	if len(vs) != 3 || vs[0].Collection == nil || vs[1].Href != base+"/1700000100" || vs[2].Href != base+"/1700000000" {
		t.Fatalf("versions: %+v", vs)
	}
	if v := vs[1]; v.Length != "4" || v.FileID != id || v.Collection != nil || v.ETag == "" ||
		v.LastModified != time.Unix(1700000100, 0).UTC().Format(http.TimeFormat) {
		t.Fatalf("version two: %+v", v)
	}
	e.mustGet("alice", "alice-pw", base+"/1700000000", []byte("one"))
	e.mustGet("alice", "alice-pw", base+"/1700000100", []byte("two!"))

	// Restore "one": the file holds it, "three" is a version now.
	st, _, hd := e.call("MOVE", base+"/1700000000", "alice", "alice-pw", nil,
		map[string]string{"Destination": e.d.URL + "/remote.php/dav/versions/alice/restore/target"})
	if st != http.StatusNoContent || numericID(t, hd.Get("OC-FileId")) != id {
		t.Fatalf("restore: %d %v", st, hd)
	}
	e.mustGet("alice", "alice-pw", "/dav/v.txt", []byte("one"))
	e.mustGet("alice", "alice-pw", base+"/1700000200", []byte("three"))
	if st := e.status("MOVE", base+"/1700000100", "alice", "alice-pw", map[string]string{"Destination": files + "/elsewhere"}); st != http.StatusForbidden {
		t.Fatalf("MOVE a version out of the view: %d", st)
	}

	// Two versions modified in one second: told apart by their ids; the
	// second alone names the newer.
	put("four", 1700000300)
	put("five", 1700000300)
	put("six", 1700000400)
	var same []string
	for _, v := range e.ncList("alice", "alice-pw", base+"/", "1")[1:] {
		if strings.HasPrefix(v.Href, base+"/1700000300.") {
			same = append(same, v.Href)
		}
	}
	if len(same) != 2 {
		t.Fatalf("same-second versions: %v", same)
	}
	e.mustGet("alice", "alice-pw", same[0], []byte("five"))
	e.mustGet("alice", "alice-pw", same[1], []byte("four"))
	e.mustGet("alice", "alice-pw", base+"/1700000300", []byte("five"))

	// Delete one.
	if st := e.status("DELETE", same[1], "alice", "alice-pw", nil); st != http.StatusNoContent {
		t.Fatalf("DELETE a version: %d", st)
	}
	if st := e.status("GET", same[1], "alice", "alice-pw", nil); st != http.StatusNotFound {
		t.Fatalf("a deleted version: %d", st)
	}

	// Only the owner's files: bob with alice's id, in his view or hers;
	// a folder's id; what is no id.
	st, _, hd = e.call("MKCOL", files+"/dir", "alice", "alice-pw", nil, nil)
	if st != http.StatusCreated {
		t.Fatalf("MKCOL: %d", st)
	}
	dirID := numericID(t, hd.Get("OC-FileId"))
	e.put("bob", "bob-pw", "/dav/mine.txt", []byte("bob's"))
	for _, c := range []struct{ user, pass, path string }{
		{"bob", "bob-pw", "/remote.php/dav/versions/bob/versions/" + id},
		{"bob", "bob-pw", "/remote.php/dav/versions/bob/versions/" + id + "/1700000000"},
		{"bob", "bob-pw", base},
		{"alice", "alice-pw", "/remote.php/dav/versions/alice/versions/notanumber"},
		{"alice", "alice-pw", "/remote.php/dav/versions/alice/versions/99999999"},
		{"alice", "alice-pw", base + "/1600000000"},
		{"alice", "alice-pw", "/remote.php/dav/versions/alice/versions/" + dirID},
	} {
		if st := e.status("PROPFIND", c.path, c.user, c.pass, map[string]string{"Depth": "1"}); st != http.StatusNotFound {
			t.Fatalf("%s: PROPFIND %s: %d", c.user, c.path, st)
		}
		if st := e.status("GET", c.path+"/1700000000", c.user, c.pass, nil); st != http.StatusNotFound {
			t.Fatalf("%s: GET %s: %d", c.user, c.path, st)
		}
	}
	if st := e.status("MOVE", "/remote.php/dav/versions/bob/versions/"+id+"/1700000200", "bob", "bob-pw",
		map[string]string{"Destination": "/remote.php/dav/versions/bob/restore/target"}); st != http.StatusNotFound {
		t.Fatalf("bob restoring alice's version: %d", st)
	}
	e.mustGet("alice", "alice-pw", "/dav/v.txt", []byte("six"))

	// Shared with bob, read-only: he reads the versions by the id he sees
	// in his own view, and cannot restore one; carol still cannot.
	e.addUser("carol", "carol-pw")
	body := []byte(`{"path":"/v.txt","user":"bob"}`)
	if st, msg, _ := e.call("POST", "/api/v1/user-shares", "alice", "alice-pw", body, nil); st != http.StatusCreated {
		t.Fatalf("share: %d %s", st, msg)
	}
	_, b, _ := e.call("PROPFIND", "/remote.php/dav/files/bob/v.txt", "bob", "bob-pw",
		[]byte(`<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop><oc:fileid/></d:prop></d:propfind>`), map[string]string{"Depth": "0"})
	if !strings.Contains(string(b), ">"+id+"</fileid>") {
		t.Fatalf("bob's view of the file id: %s", b)
	}
	bobs := "/remote.php/dav/versions/bob/versions/" + id
	if got := e.ncList("bob", "bob-pw", bobs, "1"); len(got) != len(e.ncList("alice", "alice-pw", base, "1")) {
		t.Fatalf("bob's listing of the versions: %+v", got)
	}
	e.mustGet("bob", "bob-pw", bobs+"/1700000200", []byte("three"))
	if st := e.status("MOVE", bobs+"/1700000200", "bob", "bob-pw", map[string]string{"Destination": "/remote.php/dav/versions/bob/restore/target"}); st != http.StatusForbidden {
		t.Fatalf("bob restoring through a read-only share: %d", st)
	}
	e.mustGet("alice", "alice-pw", "/dav/v.txt", []byte("six"))
	if st := e.status("PROPFIND", "/remote.php/dav/versions/carol/versions/"+id, "carol", "carol-pw", map[string]string{"Depth": "1"}); st != http.StatusNotFound {
		t.Fatalf("carol: %d", st)
	}
}
