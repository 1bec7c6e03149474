package main

import (
	"context"
	"strings"
	"testing"

	"netdisk/client"
	"netdisk/testutil"
)

// ls shows a symbolic link as ls -l does, with its target.
func TestLsShowsLinks(t *testing.T) {
	d := testutil.StartDaemon(t)
	c := client.New(d.URL, "admin", d.AdminPass)
	if _, err := c.Symlink(context.Background(), "/l", "../some where"); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, d, nil, "ls", "/")
	if r.code != 0 || !strings.Contains(r.stdout, "l -> ../some where") {
		t.Fatalf("ls: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
