package dav

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// MaxPropfindTree is the most nodes a Depth: infinity PROPFIND walks; a larger
// tree is refused with 403 propfind-finite-depth (RFC 4918 §9.1), so one
// request cannot make the server serialise a whole drive.
const MaxPropfindTree = 10000

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
				if !isSpace(t) {
					return req, fmt.Errorf("%w: text in propfind", errInvalidPropfind)
				}
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

// propfind answers PROPFIND without opening any file: one Stat, one List (or
// Tree) and one batched query for dead properties, streamed as it is built.
func (h *Handler) propfind(w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error) {
	ctx := r.Context()
	depth, err := parseDepth(r, -1)
	if err != nil {
		return 0, err
	}
	body, err := readXMLBody(r)
	if err != nil {
		return 0, err
	}
	req, err := parsePropfind(body)
	if err != nil {
		return 0, errs.E("dav.Propfind", errs.Invalid, name, err)
	}
	var self meta.Node
	var more []meta.Node
	if depth == 1 {
		self, more, err = fs.D.ListDir(ctx, fs.UID, name)
	} else {
		self, err = fs.D.Stat(ctx, fs.UID, name)
	}
	if err != nil {
		return 0, err
	}
	if self.IsDir && depth < 0 {
		var n int
		if n, err = fs.D.CountTree(ctx, fs.UID, self.Path, MaxPropfindTree); err == nil && n > MaxPropfindTree {
			writeDAVError(w, http.StatusForbidden, "propfind-finite-depth")
			return 0, nil
		}
		if err == nil {
			more, err = fs.D.Tree(ctx, fs.UID, self.Path, MaxPropfindTree)
		}
		if err != nil {
			return 0, err
		}
	}
	// Ask the lock table per entry only when the user holds any lock.
	pw := &propWriter{h: h, fs: fs, ctx: ctx, req: req, locks: h.Locks.Count(fs.UID) > 0}
	if pw.needDead() {
		if len(more) == 0 {
			ps, err := fs.D.Meta().Props(ctx, self.ID)
			if err != nil {
				return 0, err
			}
			pw.dead = map[int64][]meta.Prop{self.ID: ps}
		} else if pw.dead, err = fs.D.PropsUnder(ctx, fs.UID, self.Path, depth < 0); err != nil {
			return 0, err
		}
	}
	if pw.needQuota() {
		q, err := fs.D.QuotaOf(ctx, fs.UID)
		if err != nil {
			return 0, err
		}
		pw.quota = &q
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(http.StatusMultiStatus)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<D:multistatus xmlns:D="DAV:">`)
	pw.response(self)
	bw.Write(pw.buf)
	for _, n := range more {
		pw.response(n)
		if _, err := bw.Write(pw.buf); err != nil {
			return 0, nil // the client went away; nothing more to say
		}
	}
	bw.WriteString("</D:multistatus>\n")
	bw.Flush()
	return 0, nil
}

// writeDAVError writes an RFC 4918 error body with one precondition element.
func writeDAVError(w http.ResponseWriter, status int, cond string) {
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, `<?xml version="1.0" encoding="utf-8"?>`+"\n"+`<D:error xmlns:D="DAV:"><D:`+cond+`/></D:error>`+"\n")
}

// live properties, in allprop order. Quota properties are left out of
// allprop (RFC 4331 §3: they may be expensive; clients ask for them).
var liveProps = []string{"resourcetype", "creationdate", "getlastmodified", "getetag",
	"getcontentlength", "getcontenttype", "displayname", "supportedlock", "lockdiscovery",
	"quota-available-bytes", "quota-used-bytes"}

// nsOC is ownCloud's namespace; its checksums property carries the content's
// SHA-1 and MD5 for clients that compare without downloading (rclone with
// vendor owncloud or nextcloud).
const nsOC = "http://owncloud.org/ns"

// isOCChecksums reports whether n is oc:checksums, computed like a live
// property but only when asked for by name (not in allprop).
func isOCChecksums(n xml.Name) bool { return n.Space == nsOC && n.Local == "checksums" }

// appendOCChecksums appends oc:checksums in the form ownCloud answers and
// rclone parses (<oc:checksum>SHA1:… MD5:…</oc:checksum>), or reports that n
// has none: a folder, or a file whose checksums are not known yet.
func appendOCChecksums(b []byte, n meta.Node) ([]byte, bool) {
	if n.IsDir || n.SHA1 == "" || n.MD5 == "" {
		return b, false
	}
	b = append(b, `<checksums xmlns="`+nsOC+`"><checksum>SHA1:`...)
	b = append(b, n.SHA1...)
	b = append(b, " MD5:"...)
	b = append(b, n.MD5...)
	return append(b, "</checksum></checksums>"...), true
}

func isLive(n xml.Name) bool {
	if n.Space != nsDAV {
		return false
	}
	for _, l := range liveProps {
		if l == n.Local {
			return true
		}
	}
	return false
}

type propWriter struct {
	h     *Handler
	fs    *FS
	ctx   context.Context
	req   propfindReq
	dead  map[int64][]meta.Prop
	quota *drive.Quota
	locks bool   // the user holds locks: lockdiscovery must look
	buf   []byte // the response being built, reused
	miss  []xml.Name

	// Entries of a folder often share a modification second: the formatted
	// dates of the last one are reused.
	dateSec          int64
	lastMod, created []byte
}

// dates returns n's getlastmodified and creationdate texts.
func (p *propWriter) dates(n meta.Node) (lastMod, created []byte) {
	if sec := n.ModTime.Unix(); sec != p.dateSec || p.lastMod == nil {
		t := n.ModTime.UTC()
		p.dateSec = sec
		p.lastMod = t.AppendFormat(p.lastMod[:0], http.TimeFormat)
		p.created = t.AppendFormat(p.created[:0], time.RFC3339)
	}
	return p.lastMod, p.created
}

func (p *propWriter) needDead() bool {
	if p.req.mode != modeProp {
		return true
	}
	for _, n := range p.req.names {
		if !isLive(n) && !isOCChecksums(n) {
			return true
		}
	}
	return false
}

func (p *propWriter) needQuota() bool {
	if p.req.mode == modePropName {
		return false
	}
	for _, n := range p.req.names {
		if n.Space == nsDAV && (n.Local == "quota-available-bytes" || n.Local == "quota-used-bytes") {
			return true
		}
	}
	return false
}

const (
	propstatOK      = `<D:status>HTTP/1.1 200 OK</D:status></D:propstat>`
	propstatMissing = `<D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>`
	supportedLock   = `<D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>` +
		`<D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>`
)

// response builds one D:response for n into p.buf.
func (p *propWriter) response(n meta.Node) {
	b := append(p.buf[:0], "<D:response><D:href>"...)
	b = appendHref(b, p.h.Prefix, n.Path, n.IsDir)
	b = append(b, "</D:href><D:propstat><D:prop>"...)
	p.miss = p.miss[:0]
	switch p.req.mode {
	case modePropName:
		for _, l := range liveProps {
			if p.hasLive(n, l) {
				b = append(b, "<D:"...)
				b = append(b, l...)
				b = append(b, "/>"...)
			}
		}
		for _, d := range p.dead[n.ID] {
			b = appendDeadStart(b, d, true)
		}
	case modeAllProp:
		for _, l := range liveProps {
			if l != "quota-available-bytes" && l != "quota-used-bytes" {
				b, _ = p.appendLive(b, n, l)
			}
		}
		for _, d := range p.dead[n.ID] {
			if !isLive(xml.Name{Space: d.Space, Local: d.Local}) {
				b = appendDead(b, d)
			}
		}
		for _, name := range p.req.names { // include: live ones not in allprop
			if isLive(name) && (name.Local == "quota-available-bytes" || name.Local == "quota-used-bytes") {
				b, _ = p.appendLive(b, n, name.Local)
			}
		}
	case modeProp:
		for _, name := range p.req.names {
			ok := false
			if isLive(name) {
				b, ok = p.appendLive(b, n, name.Local)
			} else if isOCChecksums(name) {
				b, ok = appendOCChecksums(b, n)
			} else {
				for _, d := range p.dead[n.ID] {
					if d.Space == name.Space && d.Local == name.Local {
						b, ok = appendDead(b, d), true
						break
					}
				}
			}
			if !ok {
				p.miss = append(p.miss, name)
			}
		}
	}
	b = append(b, "</D:prop>"...)
	b = append(b, propstatOK...)
	if len(p.miss) > 0 {
		b = append(b, "<D:propstat><D:prop>"...)
		for _, m := range p.miss {
			if m.Space == nsDAV {
				b = append(b, "<D:"...)
				b = append(b, m.Local...)
				b = append(b, "/>"...)
			} else {
				b = appendDeadStart(b, meta.Prop{Space: m.Space, Local: m.Local}, true)
			}
		}
		b = append(b, "</D:prop>"...)
		b = append(b, propstatMissing...)
	}
	b = append(b, "</D:response>\n"...)
	p.buf = b
}

// hasLive reports whether n has the live property l.
func (p *propWriter) hasLive(n meta.Node, l string) bool {
	switch l {
	case "getcontentlength", "getcontenttype":
		return !n.IsDir
	case "quota-used-bytes":
		return n.IsDir
	case "quota-available-bytes":
		// Unlimited has no honest number: the property is left out (RFC 4331
		// lets a server omit it) rather than sending a fake or negative value
		// some clients choke on.
		return n.IsDir && (p.quota == nil || p.quota.Total > 0)
	}
	return true
}

// appendLive appends live property l of n, or reports it does not apply.
func (p *propWriter) appendLive(b []byte, n meta.Node, l string) ([]byte, bool) {
	if !p.hasLive(n, l) {
		return b, false
	}
	open := func(b []byte) []byte { return append(append(append(b, "<D:"...), l...), '>') }
	close := func(b []byte) []byte { return append(append(append(b, "</D:"...), l...), '>') }
	switch l {
	case "resourcetype":
		if n.IsDir {
			return append(b, "<D:resourcetype><D:collection/></D:resourcetype>"...), true
		}
		return append(b, "<D:resourcetype/>"...), true
	case "creationdate":
		// The tree keeps no birth time; the modification time is the honest
		// stand-in.
		b = open(b)
		_, c := p.dates(n)
		b = append(b, c...)
		return close(b), true
	case "getlastmodified":
		b = open(b)
		m, _ := p.dates(n)
		b = append(b, m...)
		return close(b), true
	case "getetag":
		b = open(b)
		b = append(b, ETag(n)...) // quotes and hex: nothing to escape
		return close(b), true
	case "getcontentlength":
		b = open(b)
		b = strconv.AppendInt(b, n.Size, 10)
		return close(b), true
	case "getcontenttype":
		b = open(b)
		b = appendEscaped(b, ContentType(n.Path))
		return close(b), true
	case "displayname":
		b = open(b)
		if n.Path != "/" {
			b = appendEscaped(b, vpath.Base(n.Path))
		}
		return close(b), true
	case "supportedlock":
		b = open(b)
		b = append(b, supportedLock...)
		return close(b), true
	case "lockdiscovery":
		b = open(b)
		if p.locks {
			b = append(b, p.h.lockDiscoveryXML(p.fs.UID, n.Path)...)
		}
		return close(b), true
	case "quota-used-bytes":
		b = open(b)
		b = strconv.AppendInt(b, p.quota.Finished+p.quota.Unfinished, 10)
		return close(b), true
	case "quota-available-bytes":
		b = open(b)
		b = strconv.AppendInt(b, p.quota.Free(), 10)
		return close(b), true
	}
	return b, false
}

// appendDeadStart appends the start tag of dead property d (self-closed when
// empty). The property's namespace becomes the default namespace, as clients
// usually declare it, so unprefixed elements in a stored value keep theirs.
func appendDeadStart(b []byte, d meta.Prop, empty bool) []byte {
	b = append(b, '<')
	b = append(b, d.Local...)
	b = append(b, ` xmlns="`...)
	b = appendEscaped(b, d.Space)
	b = append(b, '"')
	if d.Lang != "" {
		b = append(b, ` xml:lang="`...)
		b = appendEscaped(b, d.Lang)
		b = append(b, '"')
	}
	if empty {
		return append(b, "/>"...)
	}
	return append(b, '>')
}

// appendDead appends dead property d with its stored value (inner XML, as
// received).
func appendDead(b []byte, d meta.Prop) []byte {
	if d.InnerXML == "" {
		return appendDeadStart(b, d, true)
	}
	b = appendDeadStart(b, d, false)
	b = append(b, d.InnerXML...)
	b = append(b, "</"...)
	b = append(b, d.Local...)
	return append(b, '>')
}

// appendHref appends prefix+path percent-encoded (everything but unreserved
// characters and '/'), so the result is also safe XML text; collections get a
// trailing slash.
func appendHref(b []byte, prefix, p string, dir bool) []byte {
	b = appendPathEscaped(b, prefix)
	b = appendPathEscaped(b, p)
	if dir && p != "/" {
		b = append(b, '/')
	}
	return b
}

const hexDigits = "0123456789ABCDEF"

func appendPathEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '/' || c == '-' || c == '.' || c == '_' || c == '~' {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hexDigits[c>>4], hexDigits[c&15])
	}
	return b
}

// appendEscaped appends s as XML character data or a double-quoted attribute
// value.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b = append(b, "&amp;"...)
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		case '"':
			b = append(b, "&#34;"...)
		case '\r':
			b = append(b, "&#xD;"...)
		default:
			b = append(b, c)
		}
	}
	return b
}
