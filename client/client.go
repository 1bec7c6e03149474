// Package client is the Go client of netdisk's HTTP API, used by the CLI and
// the FUSE mount. Zero configuration works (NETDISK_SERVER, NETDISK_USER,
// NETDISK_PASSWORD), and the transport is injectable for tests.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"netdisk/apitype"
	"netdisk/errs"
)

// DefaultServer is used when neither a flag nor NETDISK_SERVER names one.
const DefaultServer = "http://127.0.0.1:8080"

// Client talks to one daemon as one user.
type Client struct {
	Server   string // base URL, e.g. http://127.0.0.1:8080
	User     string
	Password string
	HTTP     *http.Client
	// TLS verifies an https:// server (nil: Go's defaults, the system
	// roots); SetTLS puts it in HTTP's transport too.
	TLS *tls.Config
}

// SetTLS makes the client verify an https:// server with cfg (nil: Go's
// defaults). Transports built from the client later (the mount's) take
// c.TLS.
func (c *Client) SetTLS(cfg *tls.Config) {
	c.TLS = cfg
	if t, ok := c.HTTP.Transport.(*http.Transport); ok && cfg != nil {
		// A copy per transport: enabling HTTP/2 adds to its NextProtos.
		t.TLSClientConfig = cfg.Clone()
	}
}

// New returns a client; empty arguments fall back to the environment.
func New(server, user, password string) *Client {
	if server == "" {
		server = os.Getenv("NETDISK_SERVER")
	}
	if server == "" {
		server = DefaultServer
	}
	if user == "" {
		user = os.Getenv("NETDISK_USER")
	}
	if password == "" {
		password = os.Getenv("NETDISK_PASSWORD")
	}
	if !strings.Contains(server, "://") {
		server = "http://" + server
	}
	return &Client{Server: strings.TrimRight(server, "/"), User: user, Password: password, HTTP: &http.Client{Transport: newTransport()}}
}

// newTransport is the default transport with room for the parallel uploads
// of push (idle connections per host: the default 2 would re-dial for most
// small files) and an explicit wait for 100 Continue, which the one-request
// upload with a file hash relies on to skip sending bytes the server holds.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 32
	t.ExpectContinueTimeout = time.Second
	t.HTTP2 = HTTP2Config()
	return t
}

// HTTP2Config is the HTTP/2 side of the clients' transports (an https://
// server). Larger frames than HTTP/2's default 16 KiB let a download pass
// in a sixteenth of the frames, and the server's framer goes through one
// round of its goroutines per frame: bench/tls measured about a tenth less
// CPU for a large GET.
func HTTP2Config() *http.HTTP2Config {
	return &http.HTTP2Config{MaxReadFrameSize: 1 << 20}
}

// Error is an error answer of the API (or of the WebDAV GET downloads use).
type Error struct {
	Status  int
	Message string
	Code    string // the machine-readable code of the API's error body; "" for an answer without one
	Body    []byte // the raw body, for answers with extra fields (e.g. "missing")
}

// Kind is what the server said went wrong: the kind named by the answer's
// code (errs.KindOfCode), on which callers decide, never on the text. An
// answer without a code is not the API's (a WebDAV GET, a proxy in between):
// its status is all there is, and names the kind where it is unambiguous.
func (e *Error) Kind() errs.Kind {
	if k, ok := errs.KindOfCode(e.Code); ok || e.Code != "" {
		return k
	}
	switch e.Status {
	case http.StatusBadRequest:
		return errs.Invalid
	case http.StatusUnauthorized:
		return errs.Unauthenticated
	case http.StatusForbidden:
		return errs.Permission
	case http.StatusNotFound:
		return errs.NotFound
	case http.StatusPreconditionFailed:
		return errs.Precondition
	case http.StatusRequestEntityTooLarge:
		return errs.TooLarge
	case http.StatusLocked:
		return errs.Locked
	case http.StatusTooManyRequests:
		return errs.Throttled
	case http.StatusServiceUnavailable:
		return errs.Unavailable
	case http.StatusInsufficientStorage:
		return errs.NoSpace // the user's quota is told by its code
	}
	return errs.Other
}

func (e *Error) Error() string {
	switch e.Kind() {
	case errs.Unauthenticated:
		return "wrong user name or password"
	case errs.Quota:
		// The server's refusal names itself ("quota exceeded: 1 KiB free,
		// …"): said once, not twice.
		if strings.Contains(e.Message, "quota exceeded") {
			return e.Message
		}
		return "over quota: " + e.Message
	case errs.NoSpace:
		return "the server is out of space: " + e.Message
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// StatusOf returns the HTTP status of an API error, or 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// KindOf returns the kind of the server's answer in err's chain (Error.Kind),
// or errs.Other when err holds none (a transport failure, a local error).
func KindOf(err error) errs.Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind()
	}
	return errs.Other
}

// URL builds an absolute URL for an API path and query.
func (c *Client) URL(path string, q url.Values) string {
	u := c.Server + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// NewRequest builds an authenticated request.
func (c *Client) NewRequest(ctx context.Context, method, path string, q url.Values, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.URL(path, q), body)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(c.User, c.Password)
	return req, nil
}

// Do sends req and turns a non-2xx answer into *Error. The caller closes the
// body of a successful response.
func (c *Client) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("server %s unreachable: %w", c.Server, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &Error{Status: resp.StatusCode, Body: b}
	var eb apitype.Error
	if json.Unmarshal(b, &eb) == nil && eb.Error != "" {
		e.Message, e.Code = eb.Error, eb.Code
	} else {
		e.Message = strings.TrimSpace(string(b))
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	return nil, e
}

// JSON sends in (if not nil) as a JSON body and decodes the answer into out
// (if not nil).
func (c *Client) JSON(ctx context.Context, method, path string, q url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := c.NewRequest(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("decode %s %s answer: %w", method, path, err)
	}
	return nil
}

// Info fetches /api/v1/info, the server's announcement.
func (c *Client) Info(ctx context.Context) (apitype.Info, error) {
	var i apitype.Info
	err := c.JSON(ctx, http.MethodGet, "/api/v1/info", nil, nil, &i)
	return i, err
}
