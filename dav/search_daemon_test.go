package dav_test

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

// nextcloudSearch is the body the Nextcloud Android library
// (NcSearchMethod) sends for its searches, as its DOM serializer writes
// it: the select list it always asks for (ownCloud properties included,
// each declaring its namespace), the scope /files/USER relative to the
// WebDAV root, an empty orderby when it wants none, and a limit. where and
// orderby are the parts that differ by search type.
func nextcloudSearch(user, where, orderby string) string {
	oc := func(local string) string { return `<oc:` + local + ` xmlns:oc="http://owncloud.org/ns"/>` }
	return `<?xml version="1.0" encoding="UTF-8" standalone="no"?>` +
		`<d:searchrequest xmlns:d="DAV:" xmlns:oc="http://nextcloud.com/ns"><d:basicsearch><d:select><d:prop>` +
		`<d:displayname/><d:creationdate/><d:quota-used-bytes/><d:quota-available-bytes/>` + oc("size") +
		`<d:getcontenttype/><d:resourcetype/><d:getcontentlength/><d:getlastmodified/><d:getetag/>` +
		oc("id") + oc("favorite") + oc("permissions") +
		`</d:prop></d:select><d:from><d:scope><d:href>/files/` + user + `</d:href><d:depth>infinity</d:depth></d:scope></d:from>` +
		`<d:where>` + where + `</d:where>` + orderby +
		`<d:limit><d:nresults>50</d:nresults></d:limit></d:basicsearch></d:searchrequest>`
}

// TestSearchNextcloudClients sends, with curl against the real daemon, the
// SEARCH bodies of the Nextcloud apps' file search (like on displayname),
// "recently modified" (gt on getlastmodified, a date in their format) and
// photo search (like on getcontenttype, newest first), and checks what each
// answers, that the scope of another user is refused without a word about
// that user's files, and that OPTIONS offers SEARCH as the apps require.
func TestSearchNextcloudClients(t *testing.T) {
	curl := testutil.RequireTool(t, "curl")
	d := testutil.StartDaemon(t)
	ctx := context.Background()
	do := func(method, path, user, pass string, body string, hdr map[string]string) int {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		resp, err := d.Do(ctx, method, path, user, pass, b, hdr)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, u := range []string{"alice", "bob"} {
		if st := do("POST", "/api/v1/admin/users", "admin", d.AdminPass, `{"name":"`+u+`","password":"`+u+`-pw"}`, nil); st != 201 && st != 200 {
			t.Fatalf("add %s: %d", u, st)
		}
	}
	old := time.Now().Add(-30 * 24 * time.Hour).Unix()
	for _, f := range []struct {
		user, path string
		mtime      int64
	}{
		{"alice", "/Documents/Quarterly%20Report.pdf", old},
		{"alice", "/Documents/notes.txt", old},
		{"alice", "/Photos/beach.jpg", old},
		{"alice", "/Photos/report-scan.png", time.Now().Unix()},
		{"bob", "/bob-report.txt", time.Now().Unix()},
	} {
		if dir := f.path[:strings.LastIndex(f.path, "/")]; dir != "" {
			do("MKCOL", "/dav"+dir, f.user, f.user+"-pw", "", nil)
		}
		if st := do("PUT", "/dav"+f.path, f.user, f.user+"-pw", "x", map[string]string{"X-OC-Mtime": fmt.Sprint(f.mtime)}); st != 201 {
			t.Fatalf("PUT %s: %d", f.path, st)
		}
	}

	search := func(user, body string) (string, string) {
		t.Helper()
		cmd := exec.Command(curl, "-sS", "-X", "SEARCH", "-u", user+":"+user+"-pw", "-H", "Content-Type: text/xml",
			"--data-binary", "@-", "-w", "\n%{http_code}", d.URL+"/dav/")
		cmd.Stdin = strings.NewReader(body)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("curl: %v %s", err, out)
		}
		s := string(out)
		i := strings.LastIndex(s, "\n")
		return s[i+1:], s[:i]
	}
	like := func(prop, lit string) string {
		return `<d:like><d:prop><d:` + prop + `/></d:prop><d:literal>` + lit + `</d:literal></d:like>`
	}
	newestFirst := `<d:orderby><d:order><d:prop><d:getlastmodified/></d:prop><d:descending/></d:order></d:orderby>`
	weekAgo := time.Now().Add(-7 * 24 * time.Hour).UTC().Format("2006-01-02T15:04:05Z")
	for _, c := range []struct {
		name, where, orderby string
		want, not            []string
	}{
		{"file search", like("displayname", "%report%"), "<d:orderby/>",
			[]string{"/dav/Photos/report-scan.png", "/dav/Documents/Quarterly%20Report.pdf"}, []string{"notes.txt", "beach.jpg", "bob-report"}},
		{"recently modified", `<d:gt><d:prop><d:getlastmodified/></d:prop><d:literal>` + weekAgo + `</d:literal></d:gt>`, newestFirst,
			[]string{"/dav/Photos/report-scan.png"}, []string{"Quarterly", "beach.jpg"}},
		{"photo search", like("getcontenttype", "image/%"), newestFirst,
			[]string{"/dav/Photos/report-scan.png", "/dav/Photos/beach.jpg"}, []string{"Quarterly", "notes.txt"}},
	} {
		st, body := search("alice", nextcloudSearch("alice", c.where, c.orderby))
		if st != "207" {
			t.Fatalf("%s: %s %s", c.name, st, body)
		}
		last := -1
		for _, h := range c.want {
			i := strings.Index(body, "<D:href>"+h+"</D:href>")
			if i < 0 || i < last {
				t.Errorf("%s: %s missing or out of order in %s", c.name, h, body)
			}
			last = i
		}
		for _, n := range c.not {
			if strings.Contains(body, n) {
				t.Errorf("%s: answer has %s: %s", c.name, n, body)
			}
		}
		// The properties read as PROPFIND's: known ones 200 (the ownCloud
		// ones this server computes among them), the ownCloud ones it does
		// not keep 404.
		if !strings.Contains(body, "<D:displayname>report-scan.png</D:displayname>") || !strings.Contains(body, "<D:getcontenttype>image/png</D:getcontenttype>") ||
			!strings.Contains(body, `<permissions xmlns="http://owncloud.org/ns">RGDNV`) || !strings.Contains(body, `<favorite xmlns="http://owncloud.org/ns"/>`) {
			t.Errorf("%s: properties: %s", c.name, body)
		}
	}
	if st, body := search("bob", nextcloudSearch("alice", like("displayname", "%report%"), "")); st != "403" || strings.Contains(body, "report") {
		t.Errorf("bob searching alice's files: %s %s", st, body)
	}
	if st, body := search("bob", nextcloudSearch("bob", like("displayname", "%report%"), "")); st != "207" || !strings.Contains(body, "/dav/bob-report.txt") || strings.Contains(body, "Quarterly") {
		t.Errorf("bob's own search: %s %s", st, body)
	}
	out, err := exec.Command(curl, "-sS", "-X", "OPTIONS", "-u", "alice:alice-pw", "-D", "-", "-o", "/dev/null", d.URL+"/dav/").CombinedOutput()
	if err != nil || !strings.Contains(strings.ToLower(string(out)), "dasl: <dav:basicsearch>") || !strings.Contains(string(out), "SEARCH") {
		t.Errorf("OPTIONS: %v %s", err, out)
	}
}
