package server

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestServePprof: the profiler answers on a loopback listener of its own and
// refuses any other address.
func TestServePprof(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0", "example.com:0", "nonsense"} {
		if ps, err := ServePprof(addr, log); err == nil {
			ps.Close()
			t.Fatalf("ServePprof(%q) accepted a non-loopback address", addr)
		}
	}
	ps, err := ServePprof("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	resp, err := http.Get("http://" + ps.Addr + "/debug/pprof/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine") {
		t.Fatalf("GET /debug/pprof/: %d %.200s", resp.StatusCode, body)
	}
}
