package dav

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"

	"netdisk/errs"
	"netdisk/internal/bytesize"
)

// MaxXMLBody bounds the XML request bodies we read (PROPFIND and friends): a
// real client sends a few kilobytes; x/net/webdav would read any size.
const MaxXMLBody = 1 << 20

const nsXML = "http://www.w3.org/XML/1998/namespace"

// readXMLBody reads a request body of at most MaxXMLBody bytes: more is
// TooLarge (413).
func readXMLBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxXMLBody {
		return nil, errs.Errorf("dav.readXMLBody", errs.TooLarge, "XML body over %s", bytesize.Format(MaxXMLBody))
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxXMLBody+1))
	if err != nil {
		return nil, errs.E("dav.readXMLBody", errs.Invalid, "", fmt.Errorf("reading body: %w", err))
	}
	if len(b) > MaxXMLBody {
		return nil, errs.Errorf("dav.readXMLBody", errs.TooLarge, "XML body over %s", bytesize.Format(MaxXMLBody))
	}
	return b, nil
}

// MaxXMLDepth is how deeply elements of a request body may nest. The deepest
// body RFC 4918 defines (PROPPATCH set/prop/property/value) is 4 levels plus
// what a dead property's value holds; no client nests anywhere near 32. A
// deeper body is refused (400) before it costs anything: nesting is what made
// the old scope lookup quadratic, and x/net/webdav's own parsing (PROPPATCH)
// has no limit of its own.
const MaxXMLDepth = 32

// nsReader reads XML tokens and resolves namespaces itself, strictly:
// encoding/xml silently accepts an undeclared prefix or an undeclaration such
// as xmlns:bar="" (illegal in Namespaces in XML 1.0), which a WebDAV server
// must refuse with 400.
//
// Resolution is linear in the body: ns holds the bindings in force, and each
// open element remembers (in undo) the bindings its declarations shadowed, to
// restore at its end. A lookup is one map access however deep the nesting
// or however many scopes declare prefixes.
type nsReader struct {
	d      *xml.Decoder
	ns     map[string]string // prefix → namespace in force; "" is the default
	undo   []shadowed        // bindings shadowed by open elements' declarations, innermost last
	open   []openElem        // the open elements: RawToken does not match end tags
	tokens int               // tokens read, so tests can bound the work done
}

type openElem struct {
	name  xml.Name // raw name
	nUndo int      // len(undo) before this element's declarations
}

type shadowed struct {
	prefix string
	old    string
	had    bool
}

func newNSReader(r io.Reader) *nsReader {
	d := xml.NewDecoder(r)
	d.Strict = true
	return &nsReader{d: d, ns: map[string]string{}}
}

var errBadXML = errors.New("malformed XML")

func (n *nsReader) lookup(prefix string) (string, bool) {
	if prefix == "xml" {
		return nsXML, true
	}
	if ns, ok := n.ns[prefix]; ok {
		return ns, true
	}
	if prefix == "" {
		return "", true
	}
	return "", false
}

// declare binds prefix for the element just opened, remembering what it shadows.
func (n *nsReader) declare(prefix, ns string) {
	old, had := n.ns[prefix]
	n.undo = append(n.undo, shadowed{prefix: prefix, old: old, had: had})
	n.ns[prefix] = ns
}

// Token returns the next token with names resolved (Space is the namespace
// URI). EndElement names are resolved too. An element nested deeper than
// MaxXMLDepth is an error.
func (n *nsReader) Token() (xml.Token, error) {
	t, err := n.d.RawToken()
	if err != nil {
		return nil, err
	}
	n.tokens++
	switch t := t.(type) {
	case xml.StartElement:
		if len(n.open) >= MaxXMLDepth {
			return nil, fmt.Errorf("%w: elements nested deeper than %d", errBadXML, MaxXMLDepth)
		}
		n.open = append(n.open, openElem{name: t.Name, nUndo: len(n.undo)})
		for _, a := range t.Attr {
			switch {
			case a.Name.Space == "" && a.Name.Local == "xmlns":
				n.declare("", a.Value)
			case a.Name.Space == "xmlns":
				if a.Value == "" || a.Name.Local == "xml" || a.Name.Local == "xmlns" {
					return nil, fmt.Errorf("%w: invalid declaration of prefix %q", errBadXML, a.Name.Local)
				}
				n.declare(a.Name.Local, a.Value)
			}
		}
		out := t.Copy()
		ns, ok := n.lookup(t.Name.Space)
		if !ok || t.Name.Space == "xmlns" {
			return nil, fmt.Errorf("%w: undeclared prefix %q", errBadXML, t.Name.Space)
		}
		out.Name.Space = ns
		out.Attr = out.Attr[:0]
		for _, a := range t.Attr {
			if a.Name.Space == "xmlns" || a.Name.Space == "" && a.Name.Local == "xmlns" {
				continue
			}
			if a.Name.Space != "" {
				ns, ok := n.lookup(a.Name.Space)
				if !ok {
					return nil, fmt.Errorf("%w: undeclared prefix %q", errBadXML, a.Name.Space)
				}
				a.Name.Space = ns
			}
			out.Attr = append(out.Attr, a)
		}
		return out, nil
	case xml.EndElement:
		if len(n.open) == 0 || n.open[len(n.open)-1].name != t.Name {
			return nil, fmt.Errorf("%w: unexpected end element %s", errBadXML, t.Name.Local)
		}
		ns, ok := n.lookup(t.Name.Space)
		if !ok {
			return nil, fmt.Errorf("%w: undeclared prefix %q", errBadXML, t.Name.Space)
		}
		top := n.open[len(n.open)-1]
		n.open = n.open[:len(n.open)-1]
		for i := len(n.undo) - 1; i >= top.nUndo; i-- {
			u := n.undo[i]
			if u.had {
				n.ns[u.prefix] = u.old
			} else {
				delete(n.ns, u.prefix)
			}
		}
		n.undo = n.undo[:top.nUndo]
		return xml.EndElement{Name: xml.Name{Space: ns, Local: t.Name.Local}}, nil
	}
	return xml.CopyToken(t), nil
}

// skip consumes the rest of the current element (its start was just read).
func (n *nsReader) skip() error {
	for depth := 1; depth > 0; {
		t, err := n.Token()
		if err != nil {
			return err
		}
		switch t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// isSpace reports whether character data is only XML white space.
func isSpace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}
