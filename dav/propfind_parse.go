package dav

// Parsing a PROPFIND: the XML body (RFC 4918 §9.1) and the Depth header.

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"

	"netdisk/errs"
)

const nsDAV = "DAV:"

type propfindMode int

const (
	modeAllProp propfindMode = iota
	modePropName
	modeProp
)

// propfindReq is a parsed PROPFIND body.
type propfindReq struct {
	mode  propfindMode
	names []xml.Name // the requested properties (modeProp) or allprop's include list
}

var errInvalidPropfind = errors.New("invalid propfind body")

// parsePropfind parses a PROPFIND body; an empty one means allprop.
func parsePropfind(body []byte) (propfindReq, error) {
	if isSpace(body) {
		return propfindReq{mode: modeAllProp}, nil
	}
	nr := newNSReader(bytes.NewReader(body))
	var req propfindReq
	seen := 0
	rootDone := false
	for {
		t, err := nr.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return req, err
		}
		switch t := t.(type) {
		case xml.CharData:
			if !isSpace(t) {
				return req, fmt.Errorf("%w: text outside the root element", errInvalidPropfind)
			}
			continue
		case xml.StartElement:
		default:
			continue
		}
		start := t.(xml.StartElement)
		if rootDone || start.Name != (xml.Name{Space: nsDAV, Local: "propfind"}) {
			return req, fmt.Errorf("%w: root element must be DAV:propfind", errInvalidPropfind)
		}
		rootDone = true
		var include []xml.Name
	children:
		for {
			t, err := nr.Token()
			if err != nil {
				return req, err
			}
			switch t := t.(type) {
			case xml.EndElement:
				break children
			case xml.CharData:
				// Text between the children means nothing and is ignored,
				// as other servers ignore it: owncloudcmd 2.11 sends a
				// stray character after </d:prop>.
			case xml.StartElement:
				if t.Name.Space != nsDAV {
					// Unknown elements from other vocabularies are ignored (RFC 4918 §17).
					if err := nr.skip(); err != nil {
						return req, err
					}
					continue
				}
				switch t.Name.Local {
				case "allprop":
					req.mode = modeAllProp
					seen++
					err = nr.skip()
				case "propname":
					req.mode = modePropName
					seen++
					err = nr.skip()
				case "prop":
					req.mode = modeProp
					seen++
					req.names, err = readNames(nr)
				case "include":
					include, err = readNames(nr)
				default:
					err = nr.skip()
				}
				if err != nil {
					return req, err
				}
			}
		}
		if seen != 1 {
			return req, fmt.Errorf("%w: want exactly one of prop, allprop, propname", errInvalidPropfind)
		}
		if include != nil {
			if req.mode != modeAllProp {
				return req, fmt.Errorf("%w: include without allprop", errInvalidPropfind)
			}
			req.names = include
		}
	}
	if !rootDone {
		return req, fmt.Errorf("%w: no root element", errInvalidPropfind)
	}
	return req, nil
}

// readNames reads the child element names of a prop or include element.
func readNames(nr *nsReader) ([]xml.Name, error) {
	names := []xml.Name{}
	for {
		t, err := nr.Token()
		if err != nil {
			return nil, err
		}
		switch t := t.(type) {
		case xml.EndElement:
			return names, nil
		case xml.CharData:
			if !isSpace(t) {
				return nil, fmt.Errorf("%w: text in prop", errInvalidPropfind)
			}
		case xml.StartElement:
			names = append(names, t.Name)
			if err := nr.skip(); err != nil {
				return nil, err
			}
		}
	}
}

// parseDepth reads the Depth header: 0, 1 or infinity (-1); missing is
// infinity (RFC 4918 §9.1).
func parseDepth(r *http.Request, def int) (int, error) {
	switch r.Header.Get("Depth") {
	case "":
		return def, nil
	case "0":
		return 0, nil
	case "1":
		return 1, nil
	case "infinity", "Infinity":
		return -1, nil
	}
	return 0, errs.Errorf("dav.Depth", errs.Invalid, "invalid Depth header %q", r.Header.Get("Depth"))
}
