package dav_test

import (
	"fmt"
	"strings"
	"testing"
)

// An allprop listing writes a member's DAV:supportedlock and an unlocked
// member's empty DAV:lockdiscovery no more (the target's response keeps
// both; a locked member keeps its lock); named and included, they come
// back for every member.
func TestPropfindAllpropMembers(t *testing.T) {
	e := startPropEnv(t)
	e.must(201, "MKCOL", "/dav/d", nil, nil)
	const files = 20
	for i := range files {
		e.must(201, "PUT", fmt.Sprintf("/dav/d/file-%06d.txt", i), []byte("x"), nil)
	}
	lock := e.must(200, "LOCK", "/dav/d/file-000003.txt", []byte(`<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:">`+
		`<D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner>me</D:owner></D:lockinfo>`),
		map[string]string{"Timeout": "Second-600"})
	if !strings.Contains(lock, "opaquelocktoken:") {
		t.Fatalf("LOCK: %s", lock)
	}
	responses := func(body string) []string {
		parts := strings.Split(body, "<D:response>")
		return parts[1:]
	}
	allprop := e.must(207, "PROPFIND", "/dav/d/", nil, map[string]string{"Depth": "1"})
	rs := responses(allprop)
	if len(rs) != files+1 {
		t.Fatalf("%d responses", len(rs))
	}
	if !strings.Contains(rs[0], "<D:supportedlock><D:lockentry>") || !strings.Contains(rs[0], "<D:lockdiscovery/>") {
		t.Errorf("the target lacks its lock properties: %s", rs[0])
	}
	member := 0
	for _, r := range rs[1:] {
		locked := strings.Contains(r, "file-000003.txt")
		if strings.Contains(r, "supportedlock") || strings.Contains(r, "lockdiscovery") != locked {
			t.Errorf("member response (locked %v): %s", locked, r)
		}
		if locked && !strings.Contains(r, "opaquelocktoken:") {
			t.Errorf("the locked member does not show its lock: %s", r)
		}
		if !locked {
			member = len("<D:response>" + r)
		}
	}
	t.Logf("allprop: %d bytes per unlocked member", member)

	for _, body := range []string{
		`<D:propfind xmlns:D="DAV:"><D:prop><D:supportedlock/><D:lockdiscovery/></D:prop></D:propfind>`,
		`<D:propfind xmlns:D="DAV:"><D:allprop/><D:include><D:supportedlock/><D:lockdiscovery/></D:include></D:propfind>`,
	} {
		for _, r := range responses(e.must(207, "PROPFIND", "/dav/d/", []byte(body), map[string]string{"Depth": "1"})) {
			if !strings.Contains(r, "<D:supportedlock><D:lockentry>") || !strings.Contains(r, "lockdiscovery") {
				t.Errorf("%s: a response lacks a lock property: %s", body, r)
			}
		}
	}
}
