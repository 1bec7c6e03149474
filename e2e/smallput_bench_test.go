package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"

	"netdisk/internal/testutil"
)

// BenchmarkSmallPutHTTP PUTs 4 KiB files one after another to the real daemon
// over loopback, as `go run ./bench/webdav` does: the per-request cost of a
// small upload, HTTP, auth, hashing, the durable blob and the commit included.
// With NETDISK_PPROF=127.0.0.1:PORT the daemon serves net/http/pprof there
// (serve --pprof), so its CPU profile can be taken while this runs.
func BenchmarkSmallPutHTTP(b *testing.B) {
	var flags []string
	if a := os.Getenv("NETDISK_PPROF"); a != "" {
		flags = append(flags, "--pprof", a)
	}
	d := testutil.StartDaemon(b, flags...)
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	ctx := context.Background()
	send := func(method, path string, body []byte, want ...int) {
		req, err := http.NewRequestWithContext(ctx, method, d.URL+path, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.ContentLength = int64(len(body))
		req.SetBasicAuth("admin", d.AdminPass)
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		for _, w := range want {
			if resp.StatusCode == w {
				return
			}
		}
		b.Fatalf("%s %s: %d", method, path, resp.StatusCode)
	}
	send("MKCOL", "/dav/small", nil, http.StatusCreated)
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(i * 7)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := range b.N {
		// New content every time, as a real folder of small files is.
		data[0], data[1], data[2], data[3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		send("PUT", fmt.Sprintf("/dav/small/f%d", i), data, http.StatusCreated)
	}
}
