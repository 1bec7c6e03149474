package dav

// Writing a PROPFIND answer: each D:response is built into a reused buffer
// (live and dead properties, hrefs, XML escaping) and streamed.

import (
	"bytes"
	"encoding/xml"
	"net/http"
	"time"

	"netdisk/meta"
)

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

// nsND is netdisk's own namespace, for what no standard property says.
const nsND = "urn:netdisk:dav"

// isNDSymlink reports whether n is nd:symlink: present only on a symbolic
// link, holding its target. A link is otherwise shown as a small file whose
// body is the target (as rclone's --links keeps a link in a .rclonelink
// file) with the type SymlinkType, so a client that knows neither still
// copies, moves and deletes it as one entry.
func isNDSymlink(n xml.Name) bool { return n.Space == nsND && n.Local == "symlink" }

// appendNDSymlink appends nd:symlink of a link, or reports that n has none.
// Characters XML cannot carry (control characters, invalid UTF-8) come out
// as U+FFFD: the exact bytes are the body of a GET.
func appendNDSymlink(b []byte, n meta.Node) ([]byte, bool) {
	if !n.IsSymlink() {
		return b, false
	}
	var buf bytes.Buffer
	xml.EscapeText(&buf, []byte(n.Target)) // writes to a Buffer cannot fail
	b = append(b, `<symlink xmlns="`+nsND+`">`...)
	b = append(b, buf.Bytes()...)
	return append(b, "</symlink>"...), true
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

const (
	propstatOK      = `<D:status>HTTP/1.1 200 OK</D:status></D:propstat>`
	propstatMissing = `<D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>`
	supportedLock   = `<D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>` +
		`<D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>`
)

// An allprop listing (Depth 1 or infinity) leaves two live properties out
// of the members' responses, which made a third of each one's bytes: a
// member's DAV:supportedlock is the target's (every resource of this server
// takes the same exclusive and shared write locks), and its
// DAV:lockdiscovery is written only when the member is locked (empty says
// nothing an absent one does not). RFC 4918 §9.1 says allprop need not
// return every live property; the target's response keeps both, and a
// client that wants them per member names them (prop, or allprop with
// include), as lock-aware clients do.

// appendLockedOnly appends n's DAV:lockdiscovery when n is locked.
func (p *propWriter) appendLockedOnly(b []byte, n meta.Node) []byte {
	locks := p.h.lockDiscoveryXML(p.ctx, p.fs, n.Path)
	if locks == "" {
		return b
	}
	b = append(b, "<D:lockdiscovery>"...)
	b = append(b, locks...)
	return append(b, "</D:lockdiscovery>"...)
}

// response builds one D:response for n into p.buf.
func (p *propWriter) response(n meta.Node) {
	b := append(p.buf[:0], "<D:response><D:href>"...)
	if p.prefix == nil {
		// Escaped once: through a link the prefix is most of each href.
		p.prefix = appendPathEscaped([]byte{}, p.h.Prefix)
	}
	b = append(b, p.prefix...)
	b = appendPathEscaped(b, n.Path)
	if n.IsDir && n.Path != "/" {
		b = append(b, '/')
	}
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
		if n.IsSymlink() {
			b = append(b, `<symlink xmlns="`+nsND+`"/>`...)
		}
		for _, d := range p.dead[n.ID] {
			b = appendDeadStart(b, d, true)
		}
	case modeAllProp:
		for _, l := range liveProps {
			switch {
			case l == "quota-available-bytes" || l == "quota-used-bytes":
			case p.member && l == "supportedlock":
			case p.member && l == "lockdiscovery":
				if p.locks {
					b = p.appendLockedOnly(b, n)
				}
			default:
				b, _ = p.appendLive(b, n, l)
			}
		}
		b, _ = appendNDSymlink(b, n)
		for _, d := range p.dead[n.ID] {
			if !isLive(xml.Name{Space: d.Space, Local: d.Local}) {
				b = appendDead(b, d)
			}
		}
		for _, name := range p.req.names { // include: live ones not in allprop
			switch {
			case !isLive(name):
			case name.Local == "quota-available-bytes" || name.Local == "quota-used-bytes",
				p.member && (name.Local == "supportedlock" || name.Local == "lockdiscovery"):
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
			} else if isOwnCloud(name) {
				b, ok = p.appendOwnCloud(b, n, name)
			} else if isNDSymlink(name) {
				b, ok = appendNDSymlink(b, n)
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
