package dav

import (
	"net/http"
)

// confirmWrite evaluates the If header and the lock table for a request that
// modifies the given resources (cleaned paths). It returns an error of kind
// Locked (423) or Precondition (412) when the request may not proceed.
//
// TODO(locks): stub — the lock manager fills this in.
func (h *Handler) confirmWrite(r *http.Request, fs *FS, names ...string) error {
	return nil
}
