package dav

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"

	"netdisk/errs"
)

// MaxXMLBody bounds the XML request bodies we read (PROPFIND and friends): a
// real client sends a few kilobytes; x/net/webdav would read any size.
const MaxXMLBody = 1 << 20

const nsXML = "http://www.w3.org/XML/1998/namespace"

// readXMLBody reads a request body of at most MaxXMLBody bytes: more is
// TooLarge (413).
func readXMLBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxXMLBody {
		return nil, errs.Errorf("dav.readXMLBody", errs.TooLarge, "XML body over %d bytes", MaxXMLBody)
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxXMLBody+1))
	if err != nil {
		return nil, errs.E("dav.readXMLBody", errs.Invalid, "", fmt.Errorf("reading body: %w", err))
	}
	if len(b) > MaxXMLBody {
		return nil, errs.Errorf("dav.readXMLBody", errs.TooLarge, "XML body over %d bytes", MaxXMLBody)
	}
	return b, nil
}

// nsReader reads XML tokens and resolves namespaces itself, strictly:
// encoding/xml silently accepts an undeclared prefix or an undeclaration such
// as xmlns:bar="" (illegal in Namespaces in XML 1.0), which a WebDAV server
// must refuse with 400.
type nsReader struct {
	d     *xml.Decoder
	scope []map[string]string // prefix → namespace per open element; "" is the default
	open  []xml.Name          // raw names of the open elements: RawToken does not match them
}

func newNSReader(r io.Reader) *nsReader {
	d := xml.NewDecoder(r)
	d.Strict = true
	return &nsReader{d: d}
}

var errBadXML = errors.New("malformed XML")

func (n *nsReader) lookup(prefix string) (string, bool) {
	if prefix == "xml" {
		return nsXML, true
	}
	for i := len(n.scope) - 1; i >= 0; i-- {
		if ns, ok := n.scope[i][prefix]; ok {
			return ns, true
		}
	}
	if prefix == "" {
		return "", true
	}
	return "", false
}

// Token returns the next token with names resolved (Space is the namespace
// URI). EndElement names are resolved too.
func (n *nsReader) Token() (xml.Token, error) {
	t, err := n.d.RawToken()
	if err != nil {
		return nil, err
	}
	switch t := t.(type) {
	case xml.StartElement:
		var decl map[string]string
		for _, a := range t.Attr {
			switch {
			case a.Name.Space == "" && a.Name.Local == "xmlns":
				if decl == nil {
					decl = map[string]string{}
				}
				decl[""] = a.Value
			case a.Name.Space == "xmlns":
				if a.Value == "" || a.Name.Local == "xml" || a.Name.Local == "xmlns" {
					return nil, fmt.Errorf("%w: invalid declaration of prefix %q", errBadXML, a.Name.Local)
				}
				if decl == nil {
					decl = map[string]string{}
				}
				decl[a.Name.Local] = a.Value
			}
		}
		n.scope = append(n.scope, decl)
		n.open = append(n.open, t.Name)
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
		if len(n.open) == 0 || n.open[len(n.open)-1] != t.Name {
			return nil, fmt.Errorf("%w: unexpected end element %s", errBadXML, t.Name.Local)
		}
		n.open = n.open[:len(n.open)-1]
		ns, ok := n.lookup(t.Name.Space)
		if !ok {
			return nil, fmt.Errorf("%w: undeclared prefix %q", errBadXML, t.Name.Space)
		}
		n.scope = n.scope[:len(n.scope)-1]
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
