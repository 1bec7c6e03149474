package e2e

import (
	"encoding/json"
	"encoding/xml"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// ocsShareJSON is a share as the clients read it (Nextcloud's fields).
type ocsShareJSON struct {
	ID          string  `json:"id"`
	ShareType   int     `json:"share_type"`
	UIDOwner    string  `json:"uid_owner"`
	Permissions int     `json:"permissions"`
	Path        string  `json:"path"`
	ItemType    string  `json:"item_type"`
	ItemSource  int64   `json:"item_source"`
	Token       *string `json:"token"`
	URL         string  `json:"url"`
	Expiration  *string `json:"expiration"`
	ShareWith   *string `json:"share_with"`
	FileTarget  string  `json:"file_target"`
}

type ocsAnswer struct {
	HTTP       int
	StatusCode int
	Data       json.RawMessage
	Body       []byte
}

// ocs calls the share API as the clients do (OCS-APIRequest, a form body,
// JSON answers) on v2, or v1 when path starts with /ocs/v1.php.
func (e *env) ocs(method, path, user, pass string, form url.Values) ocsAnswer {
	e.t.Helper()
	if !strings.HasPrefix(path, "/ocs/") {
		path = "/ocs/v2.php/apps/files_sharing/api/v1/shares" + path
	}
	if strings.Contains(path, "?") {
		path += "&format=json"
	} else {
		path += "?format=json"
	}
	hdr := map[string]string{"OCS-APIRequest": "true"}
	var body []byte
	if form != nil {
		body = []byte(form.Encode())
		hdr["Content-Type"] = "application/x-www-form-urlencoded"
	}
	st, b, _ := e.call(method, path, user, pass, body, hdr)
	var env struct {
		OCS struct {
			Meta struct{ StatusCode int }
			Data json.RawMessage
		}
	}
	if err := json.Unmarshal(b, &env); err != nil {
		e.t.Fatalf("%s %s: %d %s: %v", method, path, st, b, err)
	}
	return ocsAnswer{HTTP: st, StatusCode: env.OCS.Meta.StatusCode, Data: env.OCS.Data, Body: b}
}

func (a ocsAnswer) share(t *testing.T) ocsShareJSON {
	t.Helper()
	var s ocsShareJSON
	if a.HTTP != http.StatusOK || a.StatusCode != http.StatusOK || json.Unmarshal(a.Data, &s) != nil {
		t.Fatalf("want a share: %d %s", a.HTTP, a.Body)
	}
	return s
}

func (a ocsAnswer) list(t *testing.T) []ocsShareJSON {
	t.Helper()
	var l []ocsShareJSON
	if a.HTTP != http.StatusOK || a.StatusCode != http.StatusOK || json.Unmarshal(a.Data, &l) != nil {
		t.Fatalf("want a list of shares: %d %s", a.HTTP, a.Body)
	}
	return l
}

// wantOCS fails unless the call failed with code (v2: the HTTP status too).
func (a ocsAnswer) want(t *testing.T, what string, code int) {
	t.Helper()
	if a.HTTP != code || a.StatusCode != code {
		t.Fatalf("%s: %d/%d %s, want %d", what, a.HTTP, a.StatusCode, a.Body, code)
	}
}

// The OCS share API the clients' share dialogs call, over netdisk's links
// and shares: create a public link (password, expiry, read / upload-only /
// read-write) and shares with a user and a group (read or read-write),
// list them (all, by path, a folder's children, shared with me), show,
// change and delete them; the link answers at /public.php/dav like any
// link, the share shows in the recipient's drive. Ids, paths and errors
// stay within the user's own: another user's ids are unknown, traversal
// is refused, the owner's paths never reach the recipient.
func TestNextcloudOCSShares(t *testing.T) {
	e := start(t)
	for _, u := range []string{"alice", "bob", "carol"} {
		e.addUser(u, u+"-pw")
	}
	body, _ := json.Marshal(map[string]string{"name": "team"})
	if st, msg, _ := e.call("POST", "/api/v1/admin/groups", "admin", e.d.AdminPass, body, nil); st/100 != 2 {
		t.Fatalf("group: %d %s", st, msg)
	}
	if st, msg, _ := e.call("PUT", "/api/v1/admin/groups/team/members/bob", "admin", e.d.AdminPass, nil, nil); st/100 != 2 {
		t.Fatalf("member: %d %s", st, msg)
	}
	e.mkcol("alice", "alice-pw", "/dav/projects")
	e.mkcol("alice", "alice-pw", "/dav/projects/docs")
	e.put("alice", "alice-pw", "/dav/projects/docs/f.txt", []byte("file f"))
	e.mkcol("alice", "alice-pw", "/dav/drop")
	form := func(kv ...string) url.Values {
		v := url.Values{}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}

	// A public link with a password and an expiry.
	link := e.ocs("POST", "", "alice", "alice-pw", form("path", "/projects/docs", "shareType", "3", "password", "s3cret",
		"expireDate", "2099-01-31", "permissions", "1")).share(t)
	if link.ShareType != 3 || link.Permissions != 1 || link.Token == nil || *link.Token == "" || link.URL != e.d.URL+"/s/"+*link.Token ||
		link.Expiration == nil || *link.Expiration != "2099-01-31 00:00:00" || link.ShareWith == nil || *link.ShareWith != "***" ||
		link.ItemType != "folder" || link.Path != "/projects/docs" || link.UIDOwner != "alice" {
		t.Fatalf("link: %+v", link)
	}
	if id, _ := strconv.Atoi(link.ID); id%2 != 1 {
		t.Fatalf("a link's id: %s", link.ID)
	}
	token := *link.Token
	pub := "/public.php/dav/files/" + token + "/f.txt"
	e.mustGet(token, "s3cret", pub, []byte("file f"))
	if st := e.status("GET", pub, token, "wrong", nil); st != http.StatusUnauthorized {
		t.Fatalf("the link with a wrong password: %d", st)
	}
	// v1 in XML: status code 100, HTTP 200 even for an error.
	st, b, _ := e.call("POST", "/ocs/v1.php/apps/files_sharing/api/v1/shares", "alice", "alice-pw",
		[]byte(form("path", "/drop", "shareType", "3", "permissions", "4").Encode()),
		map[string]string{"OCS-APIRequest": "true", "Content-Type": "application/x-www-form-urlencoded"})
	var x struct {
		StatusCode  int    `xml:"meta>statuscode"`
		ID          string `xml:"data>id"`
		Permissions int    `xml:"data>permissions"`
		Token       string `xml:"data>token"`
	}
	if st != http.StatusOK || xml.Unmarshal(b, &x) != nil || x.StatusCode != 100 || x.Permissions != 4 || x.Token == "" {
		t.Fatalf("v1 upload-only link in XML: %d %s", st, b)
	}
	dropID := x.ID
	if a := e.ocs("POST", "/ocs/v1.php/apps/files_sharing/api/v1/shares", "alice", "alice-pw",
		form("path", "/projects/docs/f.txt", "shareType", "3", "publicUpload", "true")); a.HTTP != 200 || a.StatusCode != 400 {
		t.Fatalf("v1: a read-write link to a file: %d/%d %s", a.HTTP, a.StatusCode, a.Body)
	}

	// Shares with a user (read) and with a group (read-write).
	us := e.ocs("POST", "", "alice", "alice-pw", form("path", "/projects/docs/f.txt", "shareType", "0", "shareWith", "bob", "permissions", "1")).share(t)
	if us.ShareType != 0 || us.Permissions != 1 || us.ShareWith == nil || *us.ShareWith != "bob" || us.ItemType != "file" || us.Token != nil {
		t.Fatalf("user share: %+v", us)
	}
	gs := e.ocs("POST", "", "alice", "alice-pw", form("path", "/projects", "shareType", "1", "shareWith", "team", "permissions", "31")).share(t)
	if gs.ShareType != 1 || gs.Permissions != 15 || gs.ShareWith == nil || *gs.ShareWith != "team" {
		t.Fatalf("group share: %+v", gs)
	}
	e.mustGet("bob", "bob-pw", "/dav/f.txt", []byte("file f"))
	if st := e.status("PUT", "/dav/f.txt", "bob", "bob-pw", nil); st != http.StatusForbidden {
		t.Fatalf("bob writing a read share: %d", st)
	}
	e.put("bob", "bob-pw", "/dav/projects/from-bob.txt", []byte("bob wrote"))
	e.mustGet("alice", "alice-pw", "/dav/projects/from-bob.txt", []byte("bob wrote"))

	// Refusals, with the codes the clients read.
	for _, c := range []struct {
		what string
		form url.Values
		code int
	}{
		{"no path", form("shareType", "3"), 404},
		{"a missing path", form("path", "/nothing", "shareType", "3"), 404},
		{"traversal", form("path", "/projects/../../etc", "shareType", "3"), 400},
		{"an unknown user", form("path", "/projects", "shareType", "0", "shareWith", "nobody"), 404},
		{"an unknown group", form("path", "/projects", "shareType", "1", "shareWith", "nogroup"), 404},
		{"an unknown type", form("path", "/projects", "shareType", "7"), 400},
		{"odd permissions", form("path", "/projects", "shareType", "3", "permissions", "2"), 400},
		{"a past expiry", form("path", "/projects", "shareType", "3", "expireDate", "2001-01-01"), 400},
		{"a bad date", form("path", "/projects", "shareType", "3", "expireDate", "tomorrow"), 400},
	} {
		e.ocs("POST", "", "alice", "alice-pw", c.form).want(t, c.what, c.code)
	}

	// Lists.
	if l := e.ocs("GET", "", "alice", "alice-pw", nil).list(t); len(l) != 4 {
		t.Fatalf("alice's shares: %+v", l)
	}
	// The same list in XML (v2 without format=json): one <element> each.
	st, b, _ = e.call("GET", "/ocs/v2.php/apps/files_sharing/api/v1/shares", "alice", "alice-pw", nil, map[string]string{"OCS-APIRequest": "true"})
	var xl struct {
		StatusCode int      `xml:"meta>statuscode"`
		IDs        []string `xml:"data>element>id"`
		Types      []int    `xml:"data>element>share_type"`
	}
	if st != http.StatusOK || xml.Unmarshal(b, &xl) != nil || xl.StatusCode != 200 || len(xl.IDs) != 4 || len(xl.Types) != 4 {
		t.Fatalf("the list in XML: %d %s", st, b)
	}
	if l := e.ocs("GET", "?path=/projects/docs", "alice", "alice-pw", nil).list(t); len(l) != 1 || l[0].ID != link.ID || l[0].Token != nil {
		t.Fatalf("shares of /projects/docs (no token once made): %+v", l)
	}
	if l := e.ocs("GET", "?path=/projects/docs&subfiles=true", "alice", "alice-pw", nil).list(t); len(l) != 1 || l[0].ID != us.ID {
		t.Fatalf("shares in /projects/docs: %+v", l)
	}
	e.ocs("GET", "?path=/projects/..%2F..%2Fetc", "alice", "alice-pw", nil).want(t, "a listing by a path with ..", 400)
	e.ocs("GET", "?path=/nothing", "alice", "alice-pw", nil).want(t, "a listing by a missing path", 404)
	in := e.ocs("GET", "?shared_with_me=true", "bob", "bob-pw", nil)
	if l := in.list(t); len(l) != 2 || strings.Contains(string(in.Body), "docs/f.txt") {
		t.Fatalf("shared with bob (alice's paths must not show): %s", in.Body)
	}
	for _, s := range in.list(t) {
		if s.UIDOwner != "alice" || (s.ID == us.ID) != (s.Path == "/f.txt") || (s.ID == gs.ID) != (s.Path == "/projects" && *s.ShareWith == "team") {
			t.Fatalf("shared with bob: %+v", s)
		}
	}
	if l := e.ocs("GET", "", "bob", "bob-pw", nil).list(t); len(l) != 0 {
		t.Fatalf("bob made no share: %+v", l)
	}

	// One share: its owner and its recipient see it; nobody else.
	if l := e.ocs("GET", "/"+link.ID, "alice", "alice-pw", nil).list(t); len(l) != 1 || l[0].ID != link.ID {
		t.Fatalf("GET the link: %+v", l)
	}
	if l := e.ocs("GET", "/"+us.ID, "bob", "bob-pw", nil).list(t); len(l) != 1 || l[0].Path != "/f.txt" {
		t.Fatalf("bob GETs his share: %+v", l)
	}
	for _, c := range []struct{ user, id string }{{"bob", link.ID}, {"carol", us.ID}, {"carol", gs.ID}, {"carol", link.ID}, {"alice", "999999"}, {"alice", "x"}} {
		e.ocs("GET", "/"+c.id, c.user, c.user+"-pw", nil).want(t, c.user+" GETs "+c.id, 404)
		e.ocs("PUT", "/"+c.id, c.user, c.user+"-pw", form("permissions", "1")).want(t, c.user+" PUTs "+c.id, 404)
		e.ocs("DELETE", "/"+c.id, c.user, c.user+"-pw", nil).want(t, c.user+" DELETEs "+c.id, 404)
	}
	e.ocs("PUT", "/"+us.ID, "bob", "bob-pw", form("permissions", "3")).want(t, "a recipient raising a share", 403)

	// Changes: the link's password and expiry off, read-write; the user
	// share read-write.
	e.ocs("PUT", "/"+link.ID, "alice", "alice-pw", form()).want(t, "a change of nothing", 400)
	ch := e.ocs("PUT", "/"+link.ID, "alice", "alice-pw", form("password", "", "expireDate", "", "permissions", "15")).share(t)
	if ch.ShareWith != nil || ch.Expiration != nil || ch.Permissions != 15 {
		t.Fatalf("link changed: %+v", ch)
	}
	e.mustGet(token, "", pub, []byte("file f"))
	e.put(token, "", "/public.php/dav/files/"+token+"/via-link.txt", []byte("linked"))
	e.ocs("PUT", "/"+dropID, "alice", "alice-pw", form("expireDate", "1999-12-31")).want(t, "a past expiry", 400)
	if ch := e.ocs("PUT", "/"+us.ID, "alice", "alice-pw", form("permissions", "19")).share(t); ch.Permissions != 3 {
		t.Fatalf("user share changed: %+v", ch)
	}
	e.put("bob", "bob-pw", "/dav/f.txt", []byte("bob edits"))
	e.mustGet("alice", "alice-pw", "/dav/projects/docs/f.txt", []byte("bob edits"))

	// Deletes: the recipient leaves the user share; the owner revokes the
	// link and the group share.
	if a := e.ocs("DELETE", "/"+us.ID, "bob", "bob-pw", nil); a.HTTP != 200 || a.StatusCode != 200 {
		t.Fatalf("bob leaves: %s", a.Body)
	}
	if st := e.status("GET", "/dav/f.txt", "bob", "bob-pw", nil); st != http.StatusNotFound {
		t.Fatalf("bob's entry after leaving: %d", st)
	}
	for _, id := range []string{link.ID, gs.ID} {
		if a := e.ocs("DELETE", "/"+id, "alice", "alice-pw", nil); a.HTTP != 200 || a.StatusCode != 200 {
			t.Fatalf("alice deletes %s: %s", id, a.Body)
		}
	}
	if st := e.status("GET", pub, token, "", nil); st != http.StatusNotFound && st != http.StatusUnauthorized {
		t.Fatalf("a revoked link: %d", st)
	}
	if st := e.status("GET", "/dav/projects/from-bob.txt", "bob", "bob-pw", nil); st != http.StatusNotFound {
		t.Fatalf("bob after the group share's end: %d", st)
	}
	if l := e.ocs("GET", "", "alice", "alice-pw", nil).list(t); len(l) != 1 || l[0].ID != dropID {
		t.Fatalf("alice's shares at the end: %+v", l)
	}

	// The capabilities say so.
	st, b, _ = e.call("GET", "/ocs/v2.php/cloud/capabilities?format=json", "alice", "alice-pw", nil, nil)
	var caps struct {
		OCS struct {
			Data struct {
				Capabilities struct {
					FilesSharing struct {
						APIEnabled bool `json:"api_enabled"`
						Public     struct {
							Enabled  bool
							Password struct{ Enforced bool }
						}
						Resharing    bool
						GroupSharing bool `json:"group_sharing"`
						User         struct {
							SendMail bool `json:"send_mail"`
						}
					} `json:"files_sharing"`
				}
			}
		}
	}
	fs := &caps.OCS.Data.Capabilities.FilesSharing
	if st != http.StatusOK || json.Unmarshal(b, &caps) != nil || !fs.APIEnabled || !fs.Public.Enabled || fs.Public.Password.Enforced ||
		fs.Resharing || !fs.GroupSharing || fs.User.SendMail || !strings.Contains(string(b), `"files_sharing"`) {
		t.Fatalf("capabilities: %d %s", st, b)
	}
}
