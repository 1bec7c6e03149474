package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"netdisk/errs"
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
		return errs.Errorf(op, errs.TooLarge, "%s is over its limit of %d bytes", b.what, over.Limit)
	case b.ctx.Err() != nil:
		return errs.E(op, errs.Canceled, "", err)
	}
	return errs.E(op, errs.Invalid, "", fmt.Errorf("%s could not be read: %w", b.what, err))
}
