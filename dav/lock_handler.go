package dav

import (
	"bytes"
	"cmp"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/webdav"

	"netdisk/davlock"
	"netdisk/drive"
	"netdisk/errs"
	"netdisk/internal/bytesize"
	"netdisk/vpath"
)

// maxLockBody bounds a LOCK request body: a lockinfo is a few hundred bytes,
// the owner element a URL or a name.
const maxLockBody = 64 << 10

// maxOwnerXML bounds the owner kept with each lock: it stays in memory for
// the lock's life, up to MaxLocksPerUser times per user.
const maxOwnerXML = 4 << 10

// lockInfo is the LOCK request body (RFC 4918 §14.11).
type lockInfo struct {
	XMLName   xml.Name  `xml:"DAV: lockinfo"`
	Exclusive *struct{} `xml:"DAV: lockscope>exclusive"`
	Shared    *struct{} `xml:"DAV: lockscope>shared"`
	Write     *struct{} `xml:"DAV: locktype>write"`
	Owner     ownerXML  `xml:"DAV: owner"`
}

// ownerXML keeps the owner element's content for lockdiscovery. It is
// re-encoded token by token with every element's namespace declared on it,
// so it stays well-formed wherever we embed it (the request's prefix
// declarations are not in scope there).
type ownerXML struct{ inner string }

func (o *ownerXML) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var b bytes.Buffer
	enc := xml.NewEncoder(&b)
	depth := 0
	for {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			attrs := t.Attr[:0:0]
			for _, a := range t.Attr {
				if a.Name.Space == "xmlns" || (a.Name.Space == "" && a.Name.Local == "xmlns") {
					continue // namespaces are redeclared by the encoder
				}
				attrs = append(attrs, a)
			}
			t.Attr = attrs
			err = enc.EncodeToken(t)
		case xml.EndElement:
			if depth == 0 {
				if err := enc.Flush(); err != nil {
					return err
				}
				o.inner = b.String()
				return nil
			}
			depth--
			err = enc.EncodeToken(t)
		case xml.CharData:
			err = enc.EncodeToken(t)
		}
		if err != nil {
			return err
		}
	}
}

// handleLock answers LOCK: a new lock (body present) or a refresh (no body,
// If header naming the lock). We answer it ourselves: x/net/webdav refuses
// shared locks with 501.
func (h *Handler) handleLock(w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error) {
	const op = "dav.Lock"
	ctx := r.Context()
	name, err := vpath.Clean(name)
	if err != nil {
		return 0, errs.E(op, errs.Invalid, name, err)
	}
	infinite := true
	switch d := r.Header.Get("Depth"); d {
	case "", "infinity", "Infinity":
	case "0":
		infinite = false
	default:
		return 0, errs.Errorf(op, errs.Invalid, "Depth %q: LOCK takes 0 or infinity", d)
	}
	timeout := davlock.ParseTimeout(r.Header.Get("Timeout"))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLockBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return 0, errs.Errorf(op, errs.TooLarge, "LOCK body over %s", bytesize.Format(maxLockBody))
		}
		return 0, errs.E(op, errs.Invalid, name, err)
	}
	ih, hasIf, err := requestIf(r)
	if err != nil {
		return 0, err
	}

	// Locks are keyed on the resource: a path inside a share is the
	// owner's, so the lock binds the owner and every recipient.
	pl, err := h.lockPlace(ctx, fs, name)
	if err != nil {
		return 0, err
	}
	if len(bytes.TrimSpace(body)) == 0 {
		// Refresh (RFC 4918 §9.10.2): the If header names the lock.
		if !hasIf {
			return 0, errs.Errorf(op, errs.Invalid, "LOCK without a body refreshes a lock and needs an If header with its token")
		}
		for _, tok := range ih.tokens() {
			l, err := h.Locks.Refresh(pl.UID, tok, pl.Path, timeout)
			if err == nil {
				return h.writeLock(w, fs, pl, l, http.StatusOK, false)
			}
		}
		return 0, errs.E(op, errs.Precondition, name, errors.New("no lock named in the If header covers this resource"))
	}

	if err := checkXML(body); err != nil {
		return 0, errs.E(op, errs.Invalid, name, fmt.Errorf("lockinfo: %w", err))
	}
	var li lockInfo
	if err := xml.NewDecoder(bytes.NewReader(body)).Decode(&li); err != nil {
		return 0, errs.E(op, errs.Invalid, name, fmt.Errorf("lockinfo: %w", err))
	}
	if (li.Exclusive == nil) == (li.Shared == nil) || li.Write == nil {
		return 0, errs.E(op, errs.Invalid, name, errors.New("lockinfo needs one lockscope (exclusive or shared) and locktype write"))
	}
	if len(li.Owner.inner) > maxOwnerXML {
		return 0, errs.E(op, errs.Invalid, name, fmt.Errorf("owner over %s", bytesize.Format(maxOwnerXML)))
	}
	if hasIf && !ih.eval(name, h.ifEnv(r, fs)) {
		return 0, errs.E(op, errs.Precondition, name, errors.New("If header conditions failed"))
	}

	_, statErr := fs.D.Stat(ctx, fs.UID, name)
	exists := statErr == nil
	if statErr != nil && !errs.Is(statErr, errs.NotFound) {
		return 0, statErr
	}
	if !exists {
		// An unmapped URL gets an empty file (RFC 4918 §7.3); its parent
		// must exist, and a depth-0 lock on that parent guards membership.
		parent, err := fs.D.Stat(ctx, fs.UID, vpath.Parent(name))
		if err != nil || !parent.IsDir {
			return 0, errs.E(op, errs.Conflict, name, errors.New("parent collection does not exist"))
		}
		if err := h.confirmMembers(r, fs, ih, name); err != nil {
			return 0, err
		}
	}
	l, err := h.Locks.Create(pl.UID, davlock.Lock{Root: pl.Path, Infinite: infinite, Shared: li.Shared != nil, Owner: li.Owner.inner, Timeout: timeout, Creator: fs.UID})
	if err != nil {
		return 0, pl.Err(err)
	}
	status := http.StatusOK
	if !exists {
		// The new lock covers the new file: its own token lets the drive
		// create it.
		r = r.WithContext(davlock.WithTokens(ctx, append(ih.tokens(), l.Token)))
		if err := createEmpty(r, fs, name); err != nil {
			h.Locks.Unlock(pl.UID, l.Token, pl.Path)
			return 0, err
		}
		status = http.StatusCreated
	}
	return h.writeLock(w, fs, pl, l, status, true)
}

func createEmpty(r *http.Request, fs *FS, name string) error {
	fw, err := fs.D.Create(r.Context(), fs.UID, name, drive.WriteOptions{ExpectedSize: 0})
	if err != nil {
		return err
	}
	_, err = fw.Commit()
	return err
}

// writeLock sends the LOCK response: the lock in a lockdiscovery property
// and, for a new lock, its token in the Lock-Token header.
func (h *Handler) writeLock(w http.ResponseWriter, fs *FS, pl drive.LockPlace, l davlock.Lock, status int, created bool) (int, error) {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<D:prop xmlns:D="DAV:"><D:lockdiscovery>`)
	h.writeActiveLock(&b, fs, pl, l, h.Locks.Now())
	b.WriteString("</D:lockdiscovery></D:prop>\n")
	if created {
		w.Header().Set("Lock-Token", "<"+l.Token+">")
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	io.WriteString(w, b.String())
	return 0, nil
}

// handleUnlock answers UNLOCK: the Lock-Token header names a lock whose
// scope must include the Request-URI.
func (h *Handler) handleUnlock(w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error) {
	const op = "dav.Unlock"
	name, err := vpath.Clean(name)
	if err != nil {
		return 0, errs.E(op, errs.Invalid, name, err)
	}
	v := strings.TrimSpace(r.Header.Get("Lock-Token"))
	if len(v) < 3 || v[0] != '<' || v[len(v)-1] != '>' {
		return 0, errs.Errorf(op, errs.Invalid, "UNLOCK needs a Lock-Token header: <opaquelocktoken:...>")
	}
	pl, err := h.lockPlace(r.Context(), fs, name)
	if err != nil {
		return 0, err
	}
	if err := h.Locks.Unlock(pl.UID, v[1:len(v)-1], pl.Path); err != nil {
		return 0, pl.Err(err)
	}
	return http.StatusNoContent, nil
}

// handleDelete answers DELETE here rather than in x/net/webdav, which keeps
// the locks of what it deleted (golang/go#42839) and answers 405 for a
// missing resource.
func (h *Handler) handleDelete(w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error) {
	const op = "dav.Delete"
	name, err := vpath.Clean(name)
	if err != nil {
		return 0, errs.E(op, errs.Invalid, name, err)
	}
	if d := r.Header.Get("Depth"); d != "" && !strings.EqualFold(d, "infinity") {
		return 0, errs.Errorf(op, errs.Invalid, "Depth %q: DELETE takes infinity", d)
	}
	if name == "/" {
		return 0, errs.E(op, errs.Permission, name, errors.New("the root collection cannot be deleted"))
	}
	if err := h.confirmWrite(r, fs, name); err != nil {
		return 0, err
	}
	if _, err := fs.D.Stat(r.Context(), fs.UID, name); err != nil {
		return 0, err
	}
	if err := fs.D.Remove(r.Context(), fs.UID, name); err != nil {
		return 0, err
	}
	return http.StatusNoContent, nil
}

// lockDiscoveryXML returns the content of the DAV:lockdiscovery property of
// name (a cleaned path of fs's user): one <D:activelock> per lock covering
// it (its own and depth-infinity ones of ancestors), or "". Each element
// declares the D prefix, so it can be embedded under any binding. PROPFIND
// calls it once per entry: one scan of a bounded lock table.
func (h *Handler) lockDiscoveryXML(ctx context.Context, fs *FS, name string) string {
	pl, err := h.lockPlace(ctx, fs, name)
	if err != nil {
		return ""
	}
	ls := h.Locks.Covering(pl.UID, pl.Path)
	if len(ls) == 0 {
		return ""
	}
	var b strings.Builder
	now := h.Locks.Now()
	for _, l := range ls {
		h.writeActiveLock(&b, fs, pl, l, now)
	}
	return b.String()
}

// writeActiveLock writes l, found at pl, as fs's user sees it: its root in
// their terms, and its token only when they took it (another user's token
// is theirs to use: RFC 4918 §6.4; the element is optional).
func (h *Handler) writeActiveLock(b *strings.Builder, fs *FS, pl drive.LockPlace, l davlock.Lock, now time.Time) {
	scope, depth := "exclusive", "0"
	if l.Shared {
		scope = "shared"
	}
	if l.Infinite {
		depth = "infinity"
	}
	left := l.Expires.Sub(now)
	secs := int64((left + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	fmt.Fprintf(b, `<D:activelock xmlns:D="DAV:"><D:locktype><D:write/></D:locktype><D:lockscope><D:%s/></D:lockscope><D:depth>%s</D:depth>`, scope, depth)
	if l.Owner != "" {
		b.WriteString("<D:owner>" + l.Owner + "</D:owner>")
	}
	fmt.Fprintf(b, `<D:timeout>Second-%d</D:timeout>`, secs)
	if creator := cmp.Or(l.Creator, pl.UID); creator == fs.UID {
		fmt.Fprintf(b, `<D:locktoken><D:href>%s</D:href></D:locktoken>`, xmlText(l.Token))
	}
	b.WriteString(`<D:lockroot><D:href>`)
	b.WriteString(xmlText(h.href(pl.View(l.Root))))
	b.WriteString("</D:href></D:lockroot></D:activelock>")
}

// href is the escaped URL path of a drive path.
func (h *Handler) href(name string) string {
	return (&url.URL{Path: h.Prefix + name}).EscapedPath()
}

func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// confirmedLS is the LockSystem x/net/webdav gets: by the time it sees a
// request, confirmWrite has already decided, so it confirms everything and
// holds nothing. (x/net/webdav still calls Create/Unlock around writes.)
type confirmedLS struct{}

var _ webdav.LockSystem = confirmedLS{}

func (confirmedLS) Confirm(time.Time, string, string, ...webdav.Condition) (func(), error) {
	return func() {}, nil
}
func (confirmedLS) Create(time.Time, webdav.LockDetails) (string, error) {
	return "opaquelocktoken:confirmed-by-netdisk", nil
}
func (confirmedLS) Refresh(time.Time, string, time.Duration) (webdav.LockDetails, error) {
	return webdav.LockDetails{}, webdav.ErrNoSuchLock
}
func (confirmedLS) Unlock(time.Time, string) error { return nil }
