package dav

import (
	"errors"
	"net/http"
	"net/url"
	"strings"

	"netdisk/errs"
	"netdisk/vpath"
)

// errForeignHost marks a Destination on another server or outside the WebDAV
// prefix: RFC 4918 §9.8.5 says 502 Bad Gateway, which no error kind stands
// for, so copyMove answers it itself.
var errForeignHost = errors.New("destination is on another server")

// destination returns the cleaned drive path the Destination header names.
// It must be on this host and under our prefix: a COPY or MOVE can never leave
// the user's own drive (paths are per user anyway).
func (h *Handler) destination(r *http.Request) (string, error) {
	const op = "dav.Destination"
	raw := r.Header.Get("Destination")
	if raw == "" {
		return "", errs.Errorf(op, errs.Invalid, "missing Destination header")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errs.E(op, errs.Invalid, "", err)
	}
	if u.Scheme != "" || u.Host != "" {
		if u.Scheme != "http" && u.Scheme != "https" || !strings.EqualFold(hostPort(u.Host, u.Scheme), hostPort(r.Host, u.Scheme)) {
			return "", errForeignHost
		}
	}
	if u.Path == "" || u.Path[0] != '/' {
		return "", errs.Errorf(op, errs.Invalid, "Destination must be an absolute URL or path")
	}
	name, ok := strings.CutPrefix(u.Path, h.Prefix+"/")
	if !ok {
		if u.Path == h.Prefix {
			name = "/"
		} else {
			// Another URL namespace of this server (/api/…, /davx/…):
			// RFC 4918 §9.8.5's 502, as for another server.
			return "", errForeignHost
		}
	}
	p, err := vpath.Clean(name)
	if err != nil {
		return "", errs.E(op, errs.Invalid, name, err)
	}
	if p == "/" {
		// The drive's root is the collection every path lives in: it can
		// be neither replaced nor created.
		return "", errs.E(op, errs.Permission, p, errors.New("the root cannot be a COPY or MOVE destination"))
	}
	return p, nil
}

// copyMove answers COPY and MOVE as metadata operations: a copy shares the
// source's chunks (no byte is read or written), a move renames in place.
func (h *Handler) copyMove(w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error) {
	ctx := r.Context()
	move := r.Method == "MOVE"
	op := "dav.Copy"
	if move {
		op = "dav.Move"
	}
	src, err := vpath.Clean(name)
	if err != nil {
		return 0, errs.E(op, errs.Invalid, name, err)
	}
	dst, err := h.destination(r)
	if errors.Is(err, errForeignHost) {
		http.Error(w, "Destination is outside this WebDAV space", http.StatusBadGateway)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	overwrite := true
	switch r.Header.Get("Overwrite") {
	case "", "T", "t":
	case "F", "f":
		overwrite = false
	default:
		return 0, errs.Errorf(op, errs.Invalid, "Overwrite must be T or F")
	}
	depth, err := parseDepth(r, -1)
	if err != nil {
		return 0, err
	}
	if depth == 1 || move && depth != -1 {
		return 0, errs.Errorf(op, errs.Invalid, "Depth must be infinity for MOVE, 0 or infinity for COPY")
	}
	if _, err := fs.D.Stat(ctx, fs.UID, src); err != nil {
		return 0, err
	}
	if src == dst {
		return 0, errs.E(op, errs.Permission, dst, errors.New("source and destination are the same"))
	}
	if vpath.IsBelow(dst, src) {
		return 0, errs.E(op, errs.Permission, dst, errors.New("destination is inside the source"))
	}
	// Locks first: a locked resource answers 423 whatever else is wrong.
	if move {
		err = h.confirmWrite(r, fs, src, dst)
	} else {
		// COPY leaves the source untouched: only the destination needs the
		// lock token.
		err = h.confirmWrite(r, fs, dst)
	}
	if err != nil {
		return 0, err
	}
	_, statErr := fs.D.Stat(ctx, fs.UID, dst)
	existed := statErr == nil
	if existed && !overwrite {
		return 0, errs.E(op, errs.Precondition, dst, errors.New("destination exists and Overwrite is F"))
	}
	if move {
		err = fs.D.Move(ctx, fs.UID, src, dst, overwrite)
	} else {
		err = fs.D.Copy(ctx, fs.UID, src, dst, overwrite, depth != 0)
	}
	if errs.Is(err, errs.Exists) {
		// Created by someone else between our check and the operation.
		err = errs.E(op, errs.Precondition, dst, err)
	}
	if err != nil {
		return 0, err
	}
	if n, err := fs.D.Stat(ctx, fs.UID, dst); err == nil {
		setOCHeaders(w.Header(), n) // else changed since: the status stands alone
	}
	if existed {
		return http.StatusNoContent, nil
	}
	return http.StatusCreated, nil
}

// hostPort drops the scheme's default port, so "h:80" and "h" compare equal.
func hostPort(host, scheme string) string {
	if scheme == "http" {
		return strings.TrimSuffix(host, ":80")
	}
	return strings.TrimSuffix(host, ":443")
}
