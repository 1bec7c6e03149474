package errs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestKindOf(t *testing.T) {
	base := E("meta.Stat", NotFound, "/a", nil)
	cases := []struct {
		err  error
		want Kind
	}{
		{nil, Other},
		{errors.New("plain"), Other},
		{base, NotFound},
		{fmt.Errorf("wrapped: %w", base), NotFound},
		{E("drive.Open", Other, "/a", base), NotFound}, // an outer Other defers to the cause
		{E("meta.Stat", Other, "", context.Canceled), Canceled},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), Canceled},
		{E("api", Quota, "", context.Canceled), Quota}, // an explicit kind wins
	}
	for _, c := range cases {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("KindOf(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestMessageHidesInternals(t *testing.T) {
	if m := Message(errors.New("sql: connection refused at 10.0.0.1")); m != "internal error" {
		t.Fatalf("unexpected error leaked: %q", m)
	}
	if m := Message(E("drive.Create", Quota, "/f", errors.New("quota exceeded: 5 bytes free, 9 needed"))); m != "/f: quota exceeded: 5 bytes free, 9 needed" {
		t.Fatalf("message %q", m)
	}
}

// TestMessageUnavailableHidesCause: a dependency's failure (which may name
// an address or a path) never reaches users; the ledger's is named as such;
// the application's own sentence is kept.
func TestMessageUnavailableHidesCause(t *testing.T) {
	dial := errors.New("dial tcp 10.1.2.3:6379: connect: connection refused")
	ledger := E("quota.Reserve", Unavailable, "", fmt.Errorf("%w: redis: %w", ErrLedgerUnreachable, dial))
	if got := Message(E("drive.Put", Other, "/a", ledger)); got != "service unavailable: quota ledger unreachable" {
		t.Errorf("ledger down: %q", got)
	}
	if got := Message(E("quota.Flush", Unavailable, "", fmt.Errorf("db: %w", dial))); got != "service unavailable" {
		t.Errorf("other dependency down: %q", got)
	}
	if got := Message(Errorf("dav.Lock", Unavailable, "too many locks")); got != "too many locks" {
		t.Errorf("own sentence: %q", got)
	}
}

// A full disk is NoSpace wherever it was raised, its message names no server
// path, and its code tells it apart from the user's quota (both are 507).
func TestNoSpace(t *testing.T) {
	osErr := &os.PathError{Op: "write", Path: "/srv/netdisk/chunks/tmp/put-123", Err: syscall.ENOSPC}
	for _, err := range []error{
		osErr,
		fmt.Errorf("dedup: put abc: %w", osErr),
		E("drive.Write", Other, "/user/file", fmt.Errorf("drive: write: %w", osErr)),
	} {
		if k := KindOf(err); k != NoSpace {
			t.Errorf("KindOf(%v) = %v, want NoSpace", err, k)
		}
		if m := Message(err); strings.Contains(m, "/srv") || strings.Contains(m, "chunks") {
			t.Errorf("message leaks a server path: %q", m)
		}
		if c := Code(err); c != "no_space" {
			t.Errorf("Code = %q, want no_space", c)
		}
	}
	if c := Code(E("quota.Reserve", Quota, "", nil)); c != "quota_exceeded" {
		t.Errorf("quota code %q", c)
	}
	// An outer Other wrapper does not hide a kind's message.
	if m := Message(E("api", Other, "", E("quota.Reserve", Quota, "", errors.New("quota exceeded: 1 bytes free, 2 needed")))); m != "quota exceeded: 1 bytes free, 2 needed" {
		t.Errorf("message %q", m)
	}
	if len(kindCodes) != len(kindNames) {
		t.Fatalf("%d codes for %d kinds", len(kindCodes), len(kindNames))
	}
}

// Every kind has its own code and the code names the kind back, so a client
// decides on an answer's code exactly as the server decided on the kind.
func TestCodesRoundTrip(t *testing.T) {
	seen := map[string]Kind{}
	for k := Kind(0); int(k) < len(kindCodes); k++ {
		c := k.Code()
		if prev, dup := seen[c]; dup {
			t.Errorf("code %q for %v and %v", c, prev, k)
		}
		seen[c] = k
		if back, ok := KindOfCode(c); !ok || back != k {
			t.Errorf("KindOfCode(%q) = %v, %v; want %v", c, back, ok, k)
		}
	}
	if k, ok := KindOfCode("from_a_newer_server"); ok || k != Other {
		t.Errorf("unknown code: %v, %v", k, ok)
	}
	if k, ok := KindOfCode(""); ok || k != Other {
		t.Errorf("empty code: %v, %v", k, ok)
	}
	if c := Code(E("server.auth", Throttled, "", nil)); c != "throttled" {
		t.Errorf("throttled code %q", c)
	}
}

// TestHTTPStatusEveryKind: every kind but Other has a status of its own, so a
// kind added without a row shows up here rather than as a 500 at the edge.
func TestHTTPStatusEveryKind(t *testing.T) {
	for k := Kind(0); int(k) < len(kindCodes); k++ {
		got := HTTPStatus(k)
		if (got == http.StatusInternalServerError) != (k == Other) {
			t.Errorf("HTTPStatus(%v) = %d", k, got)
		}
	}
}

// TestMessageNeverCarriesABackendsText: whatever the kind, a back end's
// error in the cause (PostgreSQL's message, a network error naming an
// address, a file error naming a server path) never reaches the message,
// bare or wrapped; the application's own sentence beside it still does.
func TestMessageNeverCarriesABackendsText(t *testing.T) {
	pg := &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}
	dial := &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 5432}, Err: syscall.ECONNREFUSED}
	file := &os.PathError{Op: "open", Path: "/srv/netdisk/meta.db", Err: syscall.EACCES}
	secret := []string{"terminating", "57P01", "FATAL", "10.1.2.3", "/srv"}
	for k := Kind(1); int(k) < len(kindCodes); k++ {
		for _, cause := range []error{pg, dial, file, fmt.Errorf("query users: %w", pg), fmt.Errorf("db: %w", dial),
			errors.Join(errors.New("two things failed"), file)} {
			for _, err := range []error{E("meta.Users", k, "", cause), E("drive.Get", Other, "/a", E("meta.Users", k, "/a", cause))} {
				m := Message(err)
				for _, s := range secret {
					if strings.Contains(m, s) {
						t.Errorf("kind %v, cause %v: message %q carries %q", k, cause, m, s)
					}
				}
				if m == "" {
					t.Errorf("kind %v: empty message", k)
				}
			}
		}
	}
	if got := Message(E("meta.Users", Unavailable, "", pg)); got != "service unavailable" {
		t.Errorf("database restarting: %q; want \"service unavailable\"", got)
	}
	if got := Message(E("dav.Put", Invalid, "/a", fmt.Errorf("bad depth: %w", strconv.ErrSyntax))); got != "/a: bad depth: invalid syntax" {
		t.Errorf("own sentence with a parser's cause: %q", got)
	}
}
