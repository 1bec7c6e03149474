package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"netdisk/errs"
	"netdisk/internal/bytesize"
)

// requestBody returns r's body of at most limit bytes (< 0: no limit of its
// own) with its read errors marked where they happen, so whatever consumes
// it (the JSON decoder, the drive's writer, the upload service) passes on
// whose fault a failure was: a body over the limit is TooLarge, one whose
// client went away Canceled, any other unreadable body (cut short, broken
// chunked encoding) Invalid. The consumer's own failures — a full disk, the
// quota, the ledger — keep their kinds, never mistaken for bad input.
func requestBody(r *http.Request, limit int64, what string) io.Reader {
	body := r.Body
	if limit >= 0 {
		body = http.MaxBytesReader(nil, body, limit)
	}
	return &markedBody{ctx: r.Context(), body: body, what: what}
}

type markedBody struct {
	ctx  context.Context
	body io.Reader
	what string // names the body in messages, e.g. "the JSON body"
}

func (b *markedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if err != nil && err != io.EOF {
		err = b.mark(err)
	}
	return n, err
}

func (b *markedBody) mark(err error) error {
	const op = "api.body"
	var over *http.MaxBytesError
	switch {
	case errors.As(err, &over):
		return errs.Errorf(op, errs.TooLarge, "%s is over its limit of %s", b.what, bytesize.Format(over.Limit))
	case b.ctx.Err() != nil:
		return errs.E(op, errs.Canceled, "", err)
	}
	return errs.E(op, errs.Invalid, "", fmt.Errorf("%s could not be read: %w", b.what, err))
}

// RequireJSON refuses a POST whose body is not declared JSON. POST is the one
// state-changing method a page on another site can make a browser send
// without asking first, and only with a form's or text/plain body: a JSON
// Content-Type needs a preflight the daemon never grants, so a cross-site
// form can no longer pass off `{"name": …}` as text/plain (browsers attach
// cached Basic credentials to it). A POST without a body and without a
// Content-Type (admin gc, fsck) passes: forms always send a type. Other
// methods (PUT with raw chunk bytes, DELETE) are preflighted whatever their
// body.
func RequireJSON(r *http.Request) error {
	if r.Method != http.MethodPost {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && r.ContentLength == 0 {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err == nil && mt == "application/json" {
		return nil
	}
	return errs.Errorf("api.RequireJSON", errs.Invalid, "POST needs Content-Type: application/json (got %q)", ct)
}
