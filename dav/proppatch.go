package dav

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"

	"netdisk/errs"
)

// checkXMLBody reads a request body (bounded by MaxXMLBody) and checks it
// (checkXML), then puts it back for the next reader. x/net/webdav reads
// bodies without a limit and accepts undeclared prefixes and undeclarations
// such as xmlns:bar="".
func checkXMLBody(r *http.Request) error {
	body, err := readXMLBody(r)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if isSpace(body) {
		return nil
	}
	return checkXML(body)
}

// checkXML checks that body is one well-formed element with properly
// declared namespaces, nested at most MaxXMLDepth deep. It runs before any
// parser that lacks these limits (x/net/webdav's PROPPATCH, encoding/xml's
// Decode for LOCK) sees the body.
func checkXML(body []byte) error {
	nr := newNSReader(bytes.NewReader(body))
	depth, roots := 0, 0
	for {
		t, err := nr.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return errs.E("dav.checkXMLBody", errs.Invalid, "", err)
		}
		switch t := t.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && !isSpace(t) {
				return errs.E("dav.checkXMLBody", errs.Invalid, "", fmt.Errorf("%w: text outside the root element", errBadXML))
			}
		}
	}
	if depth != 0 || roots != 1 {
		return errs.E("dav.checkXMLBody", errs.Invalid, "", errors.New("XML body must have exactly one root element"))
	}
	return nil
}

// proppatch checks the body, then lets x/net/webdav apply it through our
// DeadPropsHolder (which refuses protected live properties and applies the
// rest in one transaction).
func (h *Handler) proppatch(w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error) {
	if err := checkXMLBody(r); err != nil {
		return 0, err
	}
	h.webdav(fs).ServeHTTP(w, r)
	return 0, nil
}
