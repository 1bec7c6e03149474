package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"netdisk/apitype"
	"netdisk/client"
	"netdisk/testutil"
)

// netdisk trash, run as the built binary: a taken name restores under a
// free one and says so; a restore under a file, an unknown item and another
// user's item are clear one-line refusals; rm and empty delete for good,
// empty only with --yes off a terminal.
func TestTrashCLI(t *testing.T) {
	d := testutil.StartDaemon(t)
	mustCLI(t, d, "admin", "user", "add", "bob", "--password", "bob-pass")
	c := client.New(d.URL, "admin", d.AdminPass)
	ctx := context.Background()
	upload := func(p, body string) {
		t.Helper()
		if _, err := c.Upload(ctx, p, strings.NewReader(body), int64(len(body))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Mkdir(ctx, "/d", true); err != nil {
		t.Fatal(err)
	}
	upload("/d/report.txt", "first")
	mustCLI(t, d, "rm", "/d/report.txt")
	upload("/d/report.txt", "second")
	var items []apitype.TrashItem
	if err := json.Unmarshal([]byte(mustCLI(t, d, "trash", "ls", "--json")), &items); err != nil || len(items) != 1 {
		t.Fatalf("trash ls --json: %+v, %v", items, err)
	}
	id := items[0].ID
	if out := mustCLI(t, d, "trash", "restore", "/d/report.txt"); !strings.Contains(out, "restored /d/report.txt as /d/report (restored).txt (the name was taken)") {
		t.Fatalf("restore over a taken name said %q", out)
	}
	if n, err := c.Stat(ctx, "/d/report.txt"); err != nil || n.Size != int64(len("second")) {
		t.Fatalf("the restore replaced the new file: %+v, %v", n, err)
	}
	failCLI(t, d, nil, 1, "not in the trash", "trash", "restore", "/d/report.txt")
	failCLI(t, d, nil, 1, "not in the trash", "trash", "restore", "999999")
	failCLI(t, d, nil, 1, "want an item id", "trash", "restore", "report.txt")

	// Restoring under a file: 409, and the item stays. (The folder is moved
	// away, not deleted: deleted moments later, it would take the file's
	// item back into its own.)
	mustCLI(t, d, "rm", "/d/report.txt")
	mustCLI(t, d, "mv", "/d", "/d-moved")
	upload("/d", "a file where the folder was")
	if err := json.Unmarshal([]byte(mustCLI(t, d, "trash", "ls", "--json")), &items); err != nil || len(items) != 1 || items[0].Path != "/d/report.txt" {
		t.Fatalf("trash ls --json: %+v, %v", items, err)
	}
	file := items[0].ID
	failCLI(t, d, nil, 1, "cannot restore into /d: it is a file", "trash", "restore", "/d/report.txt")
	_, err := c.RestoreTrash(ctx, file, "")
	if client.StatusOf(err) != 409 {
		t.Fatalf("restore under a file over the API: %v, want 409", err)
	}
	// Bob's answer for admin's item is the one for no item.
	bob := map[string]string{"NETDISK_USER": "bob", "NETDISK_PASSWORD": "bob-pass"}
	failCLI(t, d, bob, 1, "not in the trash", "trash", "restore", itoa(file))
	failCLI(t, d, bob, 1, "not in the trash", "trash", "rm", itoa(file))
	failCLI(t, d, nil, 1, "not in the trash", "trash", "rm", itoa(id))

	mustCLI(t, d, "rm", "-r", "/d-moved")
	mustCLI(t, d, "rm", "/d")
	// The admin's usage shows the trash beside the files.
	var us []apitype.AdminUser
	if err := json.Unmarshal([]byte(mustCLI(t, d, "admin", "user", "list", "--json")), &us); err != nil {
		t.Fatal(err)
	}
	for _, u := range us {
		if want := map[string]int64{"admin": int64(len("second") + len("first") + len("a file where the folder was")), "bob": 0}[u.Name]; u.Trash != want || u.Finished != 0 {
			t.Fatalf("admin user list: %s has %d bytes in the trash (want %d), %d in files", u.Name, u.Trash, want, u.Finished)
		}
	}
	failCLI(t, d, nil, 2, "add --yes", "trash", "empty")
	mustCLI(t, d, "trash", "rm", itoa(file))
	if out := mustCLI(t, d, "trash", "empty", "--yes"); !strings.Contains(out, "2 item(s) deleted for good") {
		t.Fatalf("trash empty said %q", out)
	}
	if out := mustCLI(t, d, "trash", "ls"); strings.TrimSpace(out) != "ID  DELETED  SIZE  PATH" {
		t.Fatalf("trash ls of an empty trash: %q", out)
	}

	// An admin purges a user's trash: by age, then all of it.
	bc := client.New(d.URL, "bob", "bob-pass")
	if _, err := bc.Upload(ctx, "/x", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	if err := bc.Remove(ctx, "/x", false); err != nil {
		t.Fatal(err)
	}
	if out := mustCLI(t, d, "admin", "trash", "purge", "--user", "bob", "--older-than", "1d"); !strings.Contains(out, "0 item(s) of bob's trash") {
		t.Fatalf("purge of what is younger than a day said %q", out)
	}
	if out := mustCLI(t, d, "admin", "trash", "purge", "--user", "bob"); !strings.Contains(out, "1 item(s) of bob's trash") {
		t.Fatalf("purge said %q", out)
	}
	if l, err := bc.Trash(ctx, 0, 0); err != nil || len(l.Items) != 0 {
		t.Fatalf("bob's trash after the purge: %+v, %v", l, err)
	}
	failCLI(t, d, nil, 1, "no such user", "admin", "trash", "purge", "--user", "nobody")
	failCLI(t, d, nil, 2, "--user is required", "admin", "trash", "purge")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
