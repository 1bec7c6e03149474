package dav_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"netdisk/testutil"
)

// BenchmarkPropfindDepth1 times PROPFIND Depth 1 of a 10,000-entry folder on
// the real daemon, with an empty body (allprop) and with the property list
// file managers send.
//
//	go test ./dav -run '^$' -bench PropfindDepth1 -benchtime 20x
func BenchmarkPropfindDepth1(b *testing.B) {
	d := testutil.StartDaemon(b)
	fillTree(b, d, "/big", 10000)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2}}
	bodies := map[string]string{
		"allprop": "",
		"finder": `<?xml version="1.0" encoding="utf-8"?><D:propfind xmlns:D="DAV:"><D:prop><D:getlastmodified/>` +
			`<D:getcontentlength/><D:creationdate/><D:resourcetype/><D:getetag/></D:prop></D:propfind>`,
	}
	for name, body := range bodies {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				r, _ := http.NewRequestWithContext(context.Background(), "PROPFIND", d.URL+"/dav/big/", strings.NewReader(body))
				r.SetBasicAuth("admin", d.AdminPass)
				r.Header.Set("Depth", "1")
				resp, err := c.Do(r)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusMultiStatus || n < 10000*100 {
					b.Fatalf("PROPFIND: %s, %d bytes", resp.Status, n)
				}
				b.SetBytes(n)
			}
		})
	}
}
