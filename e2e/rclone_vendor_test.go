package e2e

import (
	"crypto/md5"
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"netdisk/testutil"
)

var getCountRE = regexp.MustCompile(`netdisk_http_requests_total\{code="\d+",method="GET",surface="dav"\} (\d+)`)

// davGets returns how many WebDAV GETs the daemon has answered (downloads).
func (e *env) davGets() int {
	e.t.Helper()
	st, body, _ := e.call("GET", "/metrics", "admin", e.d.AdminPass, nil, nil) // admins only
	if st != http.StatusOK {
		e.t.Fatalf("GET /metrics: %d", st)
	}
	n := 0
	for _, m := range getCountRE.FindAllStringSubmatch(string(body), -1) {
		k, _ := strconv.Atoi(m[1])
		n += k
	}
	return n
}

// rclone with vendor=owncloud / nextcloud keeps the client's modification
// times (X-OC-Mtime) and compares content checksums (oc:checksums) without
// downloading, so a same-size edit is not missed by sync.
func TestRcloneOwncloudVendors(t *testing.T) {
	testutil.RequireTool(t, "rclone")
	e := start(t)
	e.addUser("alice", "alice-pw")
	for _, vendor := range []string{"owncloud", "nextcloud"} {
		t.Run(vendor, func(t *testing.T) {
			run := e.rclone(t, vendor, "alice", "alice-pw")
			src := t.TempDir()
			files := map[string][]byte{
				"a.txt":          []byte("hello"),
				"empty":          {},
				"sub/big.bin":    testutil.RandBytes(5<<20 + 3),
				"sub/deep/x.bin": testutil.RandBytes(70000),
			}
			old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			times := map[string]time.Time{}
			i := 0
			for name, b := range files {
				p := filepath.Join(src, filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, b, 0o644); err != nil {
					t.Fatal(err)
				}
				mt := old.Add(time.Duration(i) * time.Hour)
				i++
				times[name] = mt
				if err := os.Chtimes(p, mt, mt); err != nil {
					t.Fatal(err)
				}
			}
			run("copy", src, "nd:"+vendor)

			// lsl shows the source's times (to the second, the header's precision).
			for _, line := range strings.Split(strings.TrimSpace(run("lsl", "nd:"+vendor)), "\n") {
				f := strings.Fields(line)
				if len(f) < 4 {
					t.Fatalf("lsl line %q", line)
				}
				name := strings.Join(f[3:], " ")
				got, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", f[1]+" "+f[2], time.Local)
				if err != nil {
					t.Fatalf("lsl line %q: %v", line, err)
				}
				want, ok := times[name]
				if !ok || !got.Equal(want) {
					t.Errorf("lsl %s: %s, want %s", name, got, want)
				}
			}

			// Checksums listed by the server equal the local content's.
			hashCmd, sum := "sha1sum", func(b []byte) string { s := sha1.Sum(b); return hex.EncodeToString(s[:]) }
			if vendor == "owncloud" {
				hashCmd, sum = "md5sum", func(b []byte) string { s := md5.Sum(b); return hex.EncodeToString(s[:]) }
			}
			listed := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(run(hashCmd, "nd:"+vendor)), "\n") {
				h, name, _ := strings.Cut(line, "  ")
				listed[name] = h
			}
			for name, b := range files {
				if listed[name] != sum(b) {
					t.Errorf("%s %s: %q, want %s", hashCmd, name, listed[name], sum(b))
				}
			}

			// check compares by hash: no download.
			gets := e.davGets()
			run("check", src, "nd:"+vendor)
			if n := e.davGets() - gets; n != 0 {
				t.Errorf("rclone check downloaded %d files", n)
			}

			// A same-size edit with another time is found by its checksum.
			edited := []byte("jello")
			p := filepath.Join(src, "a.txt")
			os.WriteFile(p, edited, 0o644)
			later := old.Add(48 * time.Hour)
			os.Chtimes(p, later, later)
			run("sync", src, "nd:"+vendor)
			e.mustGet("alice", "alice-pw", "/dav/"+vendor+"/a.txt", edited)
			run("check", src, "nd:"+vendor)
		})
	}
}
