package dav_test

import (
	"fmt"
	"strings"
	"testing"

	"netdisk/meta"
)

// Dead properties are bounded (one property, and the count and bytes of one
// node's): a PROPPATCH past a bound is a 207 whose properties to set are 507
// Insufficient Storage and whose other instructions are 424 Failed
// Dependency (RFC 4918 §9.2.1), each saying why, and nothing of it applies.
func TestPropPatchBounds(t *testing.T) {
	e := startPropEnv(t)
	e.must(201, "PUT", "/dav/p.txt", []byte("x"), nil)
	patch := func(set map[string]string, remove ...string) string {
		var b strings.Builder
		b.WriteString(`<D:propertyupdate xmlns:D="DAV:" xmlns:t="urn:t">`)
		if len(set) > 0 {
			b.WriteString(`<D:set><D:prop>`)
			for k, v := range set {
				fmt.Fprintf(&b, "<t:%s>%s</t:%s>", k, v, k)
			}
			b.WriteString(`</D:prop></D:set>`)
		}
		for _, k := range remove {
			fmt.Fprintf(&b, "<D:remove><D:prop><t:%s/></D:prop></D:remove>", k)
		}
		b.WriteString(`</D:propertyupdate>`)
		return b.String()
	}
	refused := func(what, body string, wantSet, wantRemoved []string) {
		t.Helper()
		ms := parseMS(t, body)
		if len(ms.Responses) != 1 {
			t.Fatalf("%s: %s", what, body)
		}
		got := map[string]string{}
		for _, ps := range ms.Responses[0].Propstats {
			for _, name := range append(append([]string{}, wantSet...), wantRemoved...) {
				if strings.Contains(string(ps.Prop.Inner), name) {
					got[name] = ps.Status
				}
			}
		}
		for _, n := range wantSet {
			if !strings.Contains(got[n], "507") {
				t.Fatalf("%s: %s is %q, want 507:\n%s", what, n, got[n], body)
			}
		}
		for _, n := range wantRemoved {
			if !strings.Contains(got[n], "424") {
				t.Fatalf("%s: %s is %q, want 424:\n%s", what, n, got[n], body)
			}
		}
		if !strings.Contains(body, "responsedescription") {
			t.Fatalf("%s: no reason given:\n%s", what, body)
		}
	}
	has := func(name string) bool {
		body := e.must(207, "PROPFIND", "/dav/p.txt", []byte(`<D:propfind xmlns:D="DAV:"><D:prop><t:`+name+` xmlns:t="urn:t"/></D:prop></D:propfind>`), map[string]string{"Depth": "0"})
		return !strings.Contains(body, "404")
	}

	e.must(207, "PROPPATCH", "/dav/p.txt", []byte(patch(map[string]string{"keep": "1"})), nil)
	// One property over its bound.
	big := strings.Repeat("v", meta.MaxPropBytes)
	body := e.must(207, "PROPPATCH", "/dav/p.txt", []byte(patch(map[string]string{"big": big}, "keep")), nil)
	refused("a value of MaxPropBytes", body, []string{"big"}, []string{"keep"})
	if has("big") || !has("keep") {
		t.Fatal("a refused PROPPATCH applied part of itself")
	}
	// The bytes of one node's properties: each request fits, the sum does not.
	half := strings.Repeat("w", meta.MaxPropBytes/2)
	n := 0
	for ; n < 2*meta.MaxPropBytesPerNode/meta.MaxPropBytes; n++ {
		st, body := e.req("PROPPATCH", "/dav/p.txt", []byte(patch(map[string]string{fmt.Sprintf("h%d", n): half})), nil)
		if st != 207 {
			t.Fatalf("PROPPATCH %d: %d %s", n, st, body)
		}
		if strings.Contains(body, "507") {
			refused("past MaxPropBytesPerNode", body, []string{fmt.Sprintf("h%d", n)}, nil)
			break
		}
	}
	if want := meta.MaxPropBytesPerNode / (meta.MaxPropBytes / 2); n != want-1 && n != want {
		t.Fatalf("refused after %d half-size properties, want about %d", n, want)
	}
	// Removing makes room again.
	var all []string
	for i := 0; i < n; i++ {
		all = append(all, fmt.Sprintf("h%d", i))
	}
	e.must(207, "PROPPATCH", "/dav/p.txt", []byte(patch(nil, all...)), nil)
	// The count of one node's properties.
	many := map[string]string{}
	for i := 0; len(many) < meta.MaxPropsPerNode; i++ {
		many[fmt.Sprintf("m%d", i)] = "1"
	}
	body = e.must(207, "PROPPATCH", "/dav/p.txt", []byte(patch(many)), nil)
	refused("MaxPropsPerNode + 1 properties", body, []string{"m0", "m1"}, nil)
	if has("m0") {
		t.Fatal("a refused PROPPATCH applied part of itself")
	}
}
