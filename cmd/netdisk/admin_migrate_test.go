package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"strings"
	"testing"

	"netdisk/client"
	"netdisk/testutil"
)

// One PostgreSQL cluster and one S3 server serve the package's tests.
func TestMain(m *testing.M) { testutil.Main(m) }

// `netdisk admin migrate` moves a populated single-node drive to PostgreSQL
// + S3; a node on the copy serves the same files, users and dead
// properties; running it again only checks.
func TestAdminMigrateToPostgresAndS3(t *testing.T) {
	pg := testutil.SharedPostgres(t)
	s3 := testutil.SharedS3(t)
	r := testutil.StartRedis(t)
	d := testutil.StartDaemon(t, "--chunk-size", "64KiB")
	mustCLI(t, d, "admin", "user", "add", "bob", "--password", "bob-pass-1")
	big := make([]byte, 5*testChunkSize+77)
	rand.Read(big)
	files := map[string][]byte{"/a/big.bin": big, "/a/small.txt": []byte("hello"), "/dup.bin": big}
	if st := davStatus(t, d, "MKCOL", "/a", "admin", d.AdminPass, nil); st != http.StatusCreated {
		t.Fatalf("MKCOL: %d", st)
	}
	for p, b := range files {
		if st := davStatus(t, d, "PUT", p, "admin", d.AdminPass, b); st != http.StatusCreated {
			t.Fatalf("PUT %s: %d", p, st)
		}
	}
	if st := davStatus(t, d, "PUT", "/bob.bin", "bob", "bob-pass-1", big); st != http.StatusCreated {
		t.Fatalf("bob's PUT: %d", st)
	}
	if _, err := client.New(d.URL, "admin", d.AdminPass).Symlink(context.Background(), "/a/link", "small.txt"); err != nil {
		t.Fatal(err)
	}
	d.Stop()

	metaURL := pg.NewDatabase(t)
	blobs, _ := s3.NewBucket(t)
	args := []string{"admin", "migrate", "--data", d.DataDir, "--to-meta", metaURL, "--to-blobs", blobs}
	out := mustCLI(t, d, args...)
	// small.txt's one chunk is kept inline: it moves with the metadata.
	if !strings.Contains(out, "metadata: copied") || !strings.Contains(out, ", 1 inline") || !strings.Contains(out, "no problems") {
		t.Fatalf("migrate said:\n%s", out)
	}
	// Again: nothing to copy, everything checked.
	out = mustCLI(t, d, args...)
	if !strings.Contains(out, "0 copied") || !strings.Contains(out, "already copied") || !strings.Contains(out, "no problems") {
		t.Fatalf("second migrate said:\n%s", out)
	}

	n := testutil.StartDaemon(t, "--meta", metaURL, "--blobs", blobs, "--redis", r.URL, "--chunk-size", "64KiB")
	get := func(path, user, pass string) []byte {
		t.Helper()
		resp, err := n.Do(context.Background(), "GET", "/dav"+path, user, pass, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s as %s on the migrated node: %d", path, user, resp.StatusCode)
		}
		return b
	}
	for p, b := range files {
		if got := get(p, "admin", d.AdminPass); !bytes.Equal(got, b) {
			t.Fatalf("%s on the migrated node: %d bytes, not the original", p, len(got))
		}
	}
	if got := get("/bob.bin", "bob", "bob-pass-1"); !bytes.Equal(got, big) {
		t.Fatal("bob's file differs on the migrated node")
	}
	// A link stays a link.
	if ln, err := client.New(n.URL, "admin", d.AdminPass).Stat(context.Background(), "/a/link"); err != nil || !ln.IsSymlink() || ln.Target != "small.txt" {
		t.Fatalf("the link on the migrated node: %+v %v", ln, err)
	}
	// New writes on the copy get fresh ids (the sequences continue).
	if st := davStatus(t, n, "PUT", "/new.txt", "admin", d.AdminPass, []byte("new")); st != http.StatusCreated {
		t.Fatalf("PUT on the migrated node: %d", st)
	}
}
