package dav

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"netdisk/errs"
	"netdisk/testutil"
)

// TestXMLNestingRefusedAfterBoundedWork: a body nested 2,000 deep, every
// tenth element declaring a few prefixes (the shape that made the
// per-element scope walk quadratic: minutes of CPU for 1 MiB), is refused
// at the element past the limit.
func TestXMLNestingRefusedAfterBoundedWork(t *testing.T) {
	body := testutil.HostileXML(t)["deep-propfind.xml"]
	nr := newNSReader(bytes.NewReader(body))
	var err error
	for err == nil {
		_, err = nr.Token()
	}
	if err == io.EOF || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("nested body: %v, want a nesting error", err)
	}
	// The reader stopped at the element past the limit: the work done does
	// not depend on the body's size.
	if nr.tokens > MaxXMLDepth+1 {
		t.Fatalf("read %d tokens before refusing, want at most %d", nr.tokens, MaxXMLDepth+1)
	}
	if err := checkXML(body); !errs.Is(err, errs.Invalid) {
		t.Fatalf("checkXML: %v, want Invalid", err)
	}
}

// TestXMLWideBodyLinear: a 1 MiB body within the depth limit but with many
// declaring scopes open at once parses in one pass (each lookup one map
// access), and scoping stays right.
func TestXMLWideBodyLinear(t *testing.T) {
	var b bytes.Buffer
	b.WriteString(`<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop>`)
	inner := ""
	for i := 0; i < MaxXMLDepth-5; i++ {
		inner += fmt.Sprintf(`<x:e%d xmlns:x="urn:%d" xmlns:y%d="urn:y">`, i, i, i)
	}
	closing := ""
	for i := MaxXMLDepth - 6; i >= 0; i-- {
		closing += fmt.Sprintf(`</x:e%d>`, i)
	}
	n := 0
	for b.Len() < MaxXMLBody-len(inner)-len(closing)-100 {
		b.WriteString(inner + closing)
		n++
	}
	b.WriteString(`</D:prop></D:set></D:propertyupdate>`)
	start := time.Now()
	if err := checkXML(b.Bytes()); err != nil {
		t.Fatalf("wide body: %v", err)
	}
	// Generous: the quadratic reader took minutes for such bodies.
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("1 MiB body took %v", d)
	}

	// Shadowed bindings come back at the end of the element that shadowed them.
	nr := newNSReader(strings.NewReader(`<a xmlns="urn:1" xmlns:p="urn:p"><b xmlns="urn:2" xmlns:p="urn:q"><p:c/></b><c/><p:d/></a>`))
	var got []string
	for {
		tok, err := nr.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if s, ok := tok.(xml.StartElement); ok {
			got = append(got, s.Name.Space+" "+s.Name.Local)
		}
	}
	want := "urn:1 a|urn:2 b|urn:q c|urn:1 c|urn:p d"
	if strings.Join(got, "|") != want {
		t.Fatalf("names %q, want %q", strings.Join(got, "|"), want)
	}
	// And an undeclared prefix after its scope closed is refused.
	if err := checkXML([]byte(`<a><b xmlns:p="urn:p"/><p:c/></a>`)); !errs.Is(err, errs.Invalid) {
		t.Fatalf("prefix used out of scope: %v", err)
	}
}
