package main

import (
	"context"
	"strings"
	"testing"

	"netdisk/client"
	"netdisk/testutil"
)

// rm words the server's refusals in its own terms, decided by the answer's
// code: a non-empty directory asks for -r, a missing path and the root say
// so; -r then removes the tree.
func TestRmMessages(t *testing.T) {
	d := testutil.StartDaemon(t)
	c := client.New(d.URL, "admin", d.AdminPass)
	ctx := context.Background()
	if _, err := c.Mkdir(ctx, "/d/e", true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Upload(ctx, "/d/f.txt", strings.NewReader("hi"), 2); err != nil {
		t.Fatal(err)
	}
	failCLI(t, d, nil, 1, "/d: directory not empty (use rm -r)", "rm", "/d")
	failCLI(t, d, nil, 1, "/nope: no such file or directory", "rm", "/nope")
	failCLI(t, d, nil, 1, "/: cannot be removed: the root cannot be removed", "rm", "/")
	if r := runCLI(t, d, nil, "rm", "-r", "/d"); r.code != 0 {
		t.Fatalf("rm -r: exit %d, %s", r.code, r.stderr)
	}
	if _, err := c.Stat(ctx, "/d"); client.StatusOf(err) != 404 {
		t.Fatalf("/d after rm -r: %v", err)
	}
}
