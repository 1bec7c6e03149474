package errs

import "net/http"

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
	case Permission:
		return http.StatusForbidden
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
	}
	return http.StatusInternalServerError
}
