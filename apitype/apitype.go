// Package apitype holds the JSON types of netdisk's HTTP API (docs/API.md):
// every request body, answer body and the error body, each declared once.
// The server (api, server) and the Go client (client, mount, cmd/netdisk)
// both import it, so a field's JSON name is spelled in one place and the two
// sides cannot drift apart; so are the values a field takes that clients
// decide on (lock statuses and events). Nothing else is in it: no behaviour
// beyond the encoding of a type (and of a lock key), and no import of another
// netdisk package, so a client that imports it links no server code.
package apitype

import (
	"bytes"
	"time"
)

// Error is every error answer: {"error": "one line for people", "code":
// "machine_readable_kind"}. Clients decide on Code (and the status), never
// on the text; the codes are listed in docs/API.md.
type Error struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	// Missing lists the chunk indexes a merge lacks (409, code conflict).
	Missing []int64 `json:"missing,omitempty"`
	// Free and Needed are the exact byte counts of a quota refusal (507,
	// code quota_exceeded) whose Error gives them rounded for people.
	Free   *int64 `json:"free,omitempty"`
	Needed *int64 `json:"needed,omitempty"`
}

// Info is the answer of GET /api/v1/info.
type Info struct {
	ChunkSize      int64  `json:"chunkSize"`
	SmallFileLimit int64  `json:"smallFileLimit"`
	Version        string `json:"version"`
}

// Time is a point in time on the wire: an RFC 3339 string with nanoseconds.
// It encodes like time.Time, and also a year past 9999 (a file's mtime set
// over WebDAV may be anything), which time.Time refuses to encode. A value
// that does not parse decodes as the zero time rather than failing the whole
// answer it is part of.
type Time struct{ time.Time }

func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.Format(time.RFC3339Nano) + `"`), nil
}

func (t *Time) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	t.Time = time.Time{}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		if p, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1])); err == nil {
			t.Time = p
		}
	}
	return nil
}
