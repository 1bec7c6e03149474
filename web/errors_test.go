package web

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"netdisk/apitype"
	"netdisk/errs"
)

// TestRefusalsOnTheWire: each of the web edge's own refusals goes out with
// the status, code and message clients and the page rely on, and its code
// names a kind whose errs table status is the one sent (415 apart: the
// sign-in's refusal of a body that is not JSON is bad input, code invalid,
// sent with the media type status).
func TestRefusalsOnTheWire(t *testing.T) {
	cases := []struct {
		name   string
		write  func(http.ResponseWriter)
		status int
		code   string
		msg    string
	}{
		{"not JSON", func(w http.ResponseWriter) { writeError(w, http.StatusUnsupportedMediaType, errNotJSON) },
			415, "invalid", "sign-in expects a JSON body"},
		{"cross site", func(w http.ResponseWriter) { WriteError(w, errCrossSite) },
			403, "permission_denied", "cross-site sign-in refused"},
		{"no password", func(w http.ResponseWriter) { WriteError(w, errNoPassword) },
			400, "invalid", "user name and password required"},
		{"CSRF", func(w http.ResponseWriter) { WriteError(w, errCSRF) },
			403, "permission_denied", "missing or wrong CSRF token"},
		{"not signed in", func(w http.ResponseWriter) { WriteError(w, errNotSignedIn) },
			401, "unauthenticated", "not signed in"},
		{"session ended", func(w http.ResponseWriter) { WriteError(w, ErrSessionEnded) },
			401, "unauthenticated", "your session has ended: sign in again"},
		{"store down", func(w http.ResponseWriter) { WriteError(w, errs.E("meta", errs.Unavailable, "", nil)) },
			503, "unavailable", "service unavailable"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		c.write(rec)
		var body apitype.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: body %q: %v", c.name, rec.Body, err)
		}
		if rec.Code != c.status || body.Code != c.code || body.Error != c.msg {
			t.Errorf("%s: %d %q %q, want %d %q %q", c.name, rec.Code, body.Code, body.Error, c.status, c.code, c.msg)
		}
		if rec.Header().Get("WWW-Authenticate") != "" {
			t.Errorf("%s: WWW-Authenticate set: the browser would open its own dialog", c.name)
		}
		k, ok := errs.KindOfCode(body.Code)
		if !ok {
			t.Errorf("%s: code %q is not in the errs table", c.name, body.Code)
		} else if st := errs.HTTPStatus(k); st != rec.Code && rec.Code != http.StatusUnsupportedMediaType {
			t.Errorf("%s: status %d, the errs table says %d for %q", c.name, rec.Code, st, body.Code)
		}
	}
}
