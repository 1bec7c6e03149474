package dav

import (
	"bufio"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"strconv"

	"netdisk/drive"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/vpath"
)

// Answering a PROPFIND: what the request needs fetched (one Stat, one List or
// Tree, dead properties and quota only when asked for) and the live
// properties' values; propfind_parse.go reads the request, propfind_write.go
// writes the XML.

// MaxPropfindTree is the most nodes a Depth: infinity PROPFIND walks; a larger
// tree is refused with 403 propfind-finite-depth (RFC 4918 §9.1), so one
// request cannot make the server serialise a whole drive.
const MaxPropfindTree = 10000

// propfind answers PROPFIND without opening any file: one Stat, one List (or
// Tree) and one batched query for dead properties, streamed as it is built.
// A Depth 1 listing and its properties are asked of the drive at once
// (ListDirProps), so a path through a share is resolved once.
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
	pw := h.newPropWriter(ctx, fs, req)
	var self meta.Node
	var more []meta.Node
	if depth == 1 {
		self, more, pw.dead, pw.writes, err = fs.D.ListDirProps(ctx, fs.UID, name, pw.needDead())
		pw.known = true
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
	if pw.needDead() && depth != 1 {
		if len(more) == 0 {
			ps, err := fs.D.NodeProps(ctx, self)
			if err != nil {
				return 0, err
			}
			pw.dead = map[int64][]meta.Prop{self.ID: ps}
		} else if pw.dead, err = fs.D.PropsUnder(ctx, fs.UID, self.Path, depth < 0); err != nil {
			return 0, err
		}
	}
	if err := pw.loadQuota(); err != nil {
		return 0, err
	}
	pw.stream(w, []meta.Node{self}, more, nil)
	return 0, nil
}

// newPropWriter returns the writer of req's properties for PROPFIND and
// SEARCH answers.
func (h *Handler) newPropWriter(ctx context.Context, fs *FS, req propfindReq) *propWriter {
	// Ask the lock table per entry only when it holds any lock on the
	// user's paths: in their table or in those of the owners of their
	// shares. A link's visitor is shown none (the owner's tokens are not
	// theirs).
	locks := false
	if pls, err := fs.placesOf(ctx); err == nil && h.link == nil {
		for _, uid := range pls.Tables() {
			if h.Locks.Count(uid) > 0 {
				locks = true
				break
			}
		}
	}
	return &propWriter{h: h, fs: fs, ctx: ctx, req: req, locks: locks}
}

// loadQuota reads the user's quota when a requested property needs it.
func (p *propWriter) loadQuota() error {
	if !p.needQuota() || p.h.link != nil {
		return nil
	}
	q, err := p.fs.D.QuotaOf(p.ctx, p.fs.UID)
	if err != nil {
		return err
	}
	p.quota = &q
	return nil
}

// stream writes the 207 multistatus: a response for each node of first and
// of more, then tail (responses already built), streamed as it is built.
func (p *propWriter) stream(w http.ResponseWriter, first, more []meta.Node, tail []byte) {
	hd := w.Header()
	hd.Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(http.StatusMultiStatus)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<D:multistatus xmlns:D="DAV:">`)
	for i, list := range [][]meta.Node{first, more} {
		p.member = i == 1
		for _, n := range list {
			p.response(n)
			if _, err := bw.Write(p.buf); err != nil {
				return // the client went away; nothing more to say
			}
		}
	}
	bw.Write(tail)
	bw.WriteString("</D:multistatus>\n")
	bw.Flush()
}

// writeDAVError writes an RFC 4918 error body with one precondition element.
func writeDAVError(w http.ResponseWriter, status int, cond string) {
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.WriteHeader(status)
	io.WriteString(w, `<?xml version="1.0" encoding="utf-8"?>`+"\n"+`<D:error xmlns:D="DAV:"><D:`+cond+`/></D:error>`+"\n")
}

type propWriter struct {
	h     *Handler
	fs    *FS
	ctx   context.Context
	req   propfindReq
	dead  map[int64][]meta.Prop
	quota *drive.Quota
	locks bool // locks are held on the user's paths: lockdiscovery must look
	// member is set while the members of the answer's target are written
	// (a Depth 1 or infinity listing): allprop leaves out what only
	// repeats the target's (propfind_write.go).
	member bool
	buf    []byte // the response being built, reused
	// prefix is the handler's prefix escaped as an href.
	prefix []byte
	// writes says which nodes the user may change (oc:permissions), as
	// the listing found it (known) or the drive when first needed.
	writes drive.Writes
	known  bool
	miss   []xml.Name

	// Entries of a folder often share a modification second: the formatted
	// dates of the last one are reused.
	dateSec          int64
	lastMod, created []byte
}

func (p *propWriter) needDead() bool {
	if p.req.mode != modeProp {
		return true
	}
	for _, n := range p.req.names {
		if !isLive(n) && !isOCChecksums(n) && !isOwnCloud(n) {
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

// hasLive reports whether n has the live property l.
func (p *propWriter) hasLive(n meta.Node, l string) bool {
	switch l {
	case "getcontentlength", "getcontenttype":
		return !n.IsDir
	case "quota-used-bytes":
		return n.IsDir && p.h.link == nil // a link's visitor has no quota here
	case "quota-available-bytes":
		if p.h.link != nil {
			return false
		}
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
		b = appendEscaped(b, NodeContentType(n))
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
		var locks string
		if p.locks {
			locks = p.h.lockDiscoveryXML(p.ctx, p.fs, n.Path)
		}
		if locks == "" {
			return append(b, "<D:lockdiscovery/>"...), true
		}
		b = open(b)
		b = append(b, locks...)
		return close(b), true
	case "quota-used-bytes":
		// What the user has: their files and what their entries cost
		// (seed 001's finished bytes, plus the metadata charge, so used and
		// available add up to the quota). Bytes of uploads under way are
		// not theirs yet; they count against the quota through
		// quota-available-bytes, and `netdisk quota` shows them.
		b = open(b)
		b = strconv.AppendInt(b, p.quota.Finished+p.quota.Metadata, 10)
		return close(b), true
	case "quota-available-bytes":
		b = open(b)
		b = strconv.AppendInt(b, p.quota.Free(), 10)
		return close(b), true
	}
	return b, false
}
