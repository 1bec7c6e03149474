package mount_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"syscall"
	"testing"

	"netdisk/client"
	"netdisk/errs"
	"netdisk/mount"
)

// The mount decides on the answer's code, never on its text: a message
// that reads like another kind changes nothing, and two answers with the
// same status (409, 507) get their own errnos.
func TestErrnoByCode(t *testing.T) {
	cases := []struct {
		status int
		code   string
		msg    string
		want   syscall.Errno
	}{
		{409, "not_empty", "is a directory", syscall.ENOTEMPTY},
		{409, "is_a_directory", "not empty", syscall.EISDIR},
		{409, "not_a_directory", "parent missing", syscall.ENOTDIR},
		{409, "parent_missing", "exists", syscall.ENOENT},
		{409, "exists", "no such file", syscall.EEXIST},
		{409, "conflict", "exists", syscall.EIO},
		{507, "quota_exceeded", "no space", syscall.EDQUOT},
		{507, "no_space", "quota exceeded", syscall.ENOSPC},
		{429, "throttled", "", syscall.EIO},
		{423, "locked", "", syscall.EACCES},
		{404, "not_found", "", syscall.ENOENT},
		{418, "a_code_from_a_newer_server", "", syscall.EIO},
		// Answers that are not the API's (WebDAV GET, a proxy): the status.
		{404, "", "Not Found", syscall.ENOENT},
		{507, "", "", syscall.ENOSPC},
		{502, "", "Bad Gateway", syscall.EIO},
	}
	for _, c := range cases {
		err := fmt.Errorf("op: %w", &client.Error{Status: c.status, Code: c.code, Message: c.msg})
		if got := mount.Errno(err); got != c.want {
			t.Errorf("%d %q (%q): %v, want %v", c.status, c.code, c.msg, got, c.want)
		}
	}
	if got := mount.Errno(errors.New("not empty")); got != syscall.EIO {
		t.Errorf("a local error reading like a kind: %v, want EIO", got)
	}
}

// errs.go names, beside each kind, the errno the mount returns for it; this
// keeps the two in step.
func TestErrnoMatchesErrsComments(t *testing.T) {
	src, err := os.ReadFile("../errs/errs.go")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)const \(\n(\tOther .*?)\n\)`).FindSubmatch(src)
	if block == nil {
		t.Fatal("no Kind const block in errs.go")
	}
	line := regexp.MustCompile(`(?m)^\t(\w+)\s.*// .*/ (E[A-Z]+|EINTR)\b`)
	names := regexp.MustCompile(`(?m)^\t(\w+)\b`).FindAllSubmatch(block[1], -1)
	errnos := map[string]syscall.Errno{"ENOENT": syscall.ENOENT, "EEXIST": syscall.EEXIST, "ENOTDIR": syscall.ENOTDIR,
		"EISDIR": syscall.EISDIR, "EINVAL": syscall.EINVAL, "EACCES": syscall.EACCES, "EDQUOT": syscall.EDQUOT,
		"EIO": syscall.EIO, "EFBIG": syscall.EFBIG, "ENOTEMPTY": syscall.ENOTEMPTY, "ESTALE": syscall.ESTALE,
		"EINTR": syscall.EINTR, "ENOSPC": syscall.ENOSPC, "EROFS": syscall.EROFS, "EXDEV": syscall.EXDEV}
	checked := 0
	for i, n := range names {
		k := errs.Kind(i)
		m := line.FindSubmatch(regexp.MustCompile(`(?m)^\t` + string(n[1]) + `\b.*$`).Find(block[1]))
		if m == nil {
			t.Errorf("errs.go: kind %s has no errno in its comment", n[1])
			continue
		}
		want, ok := errnos[string(m[2])]
		if !ok {
			t.Errorf("errs.go: kind %s names %s, unknown here", n[1], m[2])
			continue
		}
		err := &client.Error{Status: http.StatusTeapot, Code: k.Code(), Message: "x"}
		if got := mount.Errno(err); got != want {
			t.Errorf("kind %s (code %s): the mount returns %v, errs.go says %v", n[1], k.Code(), got, want)
		}
		checked++
	}
	if checked < 19 {
		t.Fatalf("checked %d kinds", checked)
	}
}

// TestErrnoUnreachable: a server out of reach (a refused connection, as the
// client wraps it, or known lost) is EHOSTDOWN; a deadline with no such
// cause stays EIO.
func TestErrnoUnreachable(t *testing.T) {
	refused := fmt.Errorf("server x unreachable: %w", &url.Error{Op: "Get", URL: "http://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}})
	for _, err := range []error{refused, mount.ErrOffline, fmt.Errorf("stat: %w", mount.ErrOffline)} {
		if got := mount.Errno(err); got != syscall.EHOSTDOWN {
			t.Errorf("Errno(%v) = %v, want EHOSTDOWN", err, got)
		}
	}
	if got := mount.Errno(context.DeadlineExceeded); got != syscall.EIO {
		t.Errorf("Errno(deadline) = %v, want EIO", got)
	}
}
