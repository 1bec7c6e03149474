package errs

import (
	"net/http"
	"strconv"
)

// HTTPStatus is the HTTP status of kind k: the JSON API's table (api.Status)
// and WebDAV's (dav.Status) but where RFC 4918 asks otherwise, so the two
// HTTP edges cannot drift apart on the kinds they agree on.
func HTTPStatus(k Kind) int {
	switch k {
	case NotFound:
		return http.StatusNotFound
	case Exists, IsDir, NotDir, NoParent, Conflict, NotEmpty:
		return http.StatusConflict
	case Invalid:
		return http.StatusBadRequest
	case Permission, ReadOnly:
		return http.StatusForbidden
	case CrossTree:
		// RFC 4918 §9.9.4: the destination is on another server's space.
		return http.StatusBadGateway
	case Quota, NoSpace:
		return http.StatusInsufficientStorage
	case Unauthenticated:
		return http.StatusUnauthorized
	case Unavailable:
		return http.StatusServiceUnavailable
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case Mismatch:
		return http.StatusUnprocessableEntity
	case Locked:
		return http.StatusLocked
	case Precondition:
		return http.StatusPreconditionFailed
	case Canceled:
		return StatusClientClosed
	case Throttled, TooMany:
		return http.StatusTooManyRequests
	case Unsupported:
		return http.StatusUnsupportedMediaType
	}
	return http.StatusInternalServerError
}

// RetryAfter is the Retry-After, in seconds, of a 503: a dependency coming
// back (PostgreSQL, S3 or Redis restarting) is usually back within it, and
// clients that honour it do not hammer a node that cannot serve yet.
const RetryAfter = 5

// SetErrorHeaders sets what an error answer of status carries beside its
// body: Retry-After on a 503. Every HTTP edge calls it where it writes an
// error's status.
func SetErrorHeaders(h http.Header, status int) {
	if status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", strconv.Itoa(RetryAfter))
	}
}

// FailureRecorder is implemented by a ResponseWriter that accounts for
// responses (the daemon's metrics): a response whose body failed after its
// status was sent is counted with the failure's status, not the 2xx it
// started as.
type FailureRecorder interface{ RecordFailure(status int) }

// AbortResponse ends a response whose body failed after its status was
// sent: it tells the FailureRecorder in w's Unwrap chain, if any, the status
// err would have had, then aborts the connection (http.ErrAbortHandler), so
// the client sees a truncated body rather than a clean end of a short one.
// It does not return; the caller logs err first.
func AbortResponse(w http.ResponseWriter, err error) {
	status := HTTPStatus(KindOf(err))
	for x := w; x != nil; {
		if fr, ok := x.(FailureRecorder); ok {
			fr.RecordFailure(status)
			break
		}
		u, ok := x.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		x = u.Unwrap()
	}
	panic(http.ErrAbortHandler)
}
