package main

import (
	"context"
	"strings"
	"testing"

	"netdisk/client"
	"netdisk/testutil"
)

// versions words its refusals in the user's terms (a bad id, a folder, a
// version of another file, a missing -o) and has help with examples.
func TestVersionsMessages(t *testing.T) {
	d := testutil.StartDaemon(t)
	c := client.New(d.URL, "admin", d.AdminPass)
	ctx := context.Background()
	for _, p := range []string{"/f.txt", "/g.txt"} {
		for _, body := range []string{"one", "two"} {
			if _, err := c.Upload(ctx, p, strings.NewReader(body+p), int64(len(body+p))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.Mkdir(ctx, "/d", false); err != nil {
		t.Fatal(err)
	}
	l, err := c.Versions(ctx, "/g.txt")
	if err != nil || len(l.Versions) != 1 {
		t.Fatalf("versions of /g.txt: %+v, %v", l, err)
	}
	gv := strings.TrimSpace(strings.Fields(mustCLI(t, d, "versions", "ls", "/g.txt"))[5]) // the header's 5 words, then the id
	failCLI(t, d, nil, 1, `version "x" is not a version id`, "versions", "get", "/f.txt", "x", "-o", "-")
	failCLI(t, d, nil, 1, "-o FILE is required", "versions", "get", "/f.txt", gv)
	failCLI(t, d, nil, 1, "a folder has no versions", "versions", "ls", "/d")
	failCLI(t, d, nil, 1, "no version", "versions", "restore", "/f.txt", gv)
	if out := mustCLI(t, d, "versions", "get", "/g.txt", gv, "-o", "-"); out != "one/g.txt" {
		t.Fatalf("versions get -o - printed %q", out)
	}
	for _, args := range [][]string{{"versions"}, {"versions", "ls"}, {"versions", "get"}, {"versions", "restore"}} {
		out := mustCLI(t, d, append(args, "--help")...)
		if !strings.Contains(out, "Usage:") || !strings.Contains(out, "Examples:") {
			t.Errorf("%v --help lacks usage or examples:\n%s", args, out)
		}
	}
}
