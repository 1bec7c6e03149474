package dav

import "net/http"

// mkcol creates a collection. It is ours, not x/net/webdav's, because that
// one answers every failure but a missing parent with 405: a full disk or a
// spent quota must be 507 (RFC 4918 §9.3.1), a busy database 503.
func (h *Handler) mkcol(w http.ResponseWriter, r *http.Request, fs *FS, name string) (int, error) {
	if r.ContentLength > 0 {
		// No MKCOL body type is defined (RFC 4918 §9.3).
		return http.StatusUnsupportedMediaType, nil
	}
	n, err := fs.D.Mkdir(r.Context(), fs.UID, name)
	if err != nil {
		return 0, err // Status: 405 taken, 409 no parent, 507 full
	}
	setOCHeaders(w.Header(), n)
	return http.StatusCreated, nil
}
