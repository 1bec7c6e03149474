package drive_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
)

// TestSearch runs a search through the drive: pages newest first with an
// opaque cursor that only its own query accepts, the bounds of its input,
// a folder as scope.
func TestSearch(t *testing.T) {
	ctx := context.Background()
	e := drivetest.New(t, drivetest.Options{})
	d := e.Drive
	u := e.AddUser(t, "alice", 0)
	base := time.Unix(1_700_000_000, 0)
	if _, err := d.Mkdir(ctx, u.ID, "/Photos"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 7 {
		p := "/Photos/IMG_" + string(rune('a'+i)) + ".JPG"
		if _, _, err := d.PutFile(ctx, u.ID, p, drive.PutOptions{Size: 1, ModTime: base.Add(time.Duration(i) * time.Minute)}, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
		want = append([]string{p}, want...)
	}
	if _, _, err := d.PutFile(ctx, u.ID, "/notes.txt", drive.PutOptions{Size: 1, ModTime: base}, strings.NewReader("y")); err != nil {
		t.Fatal(err)
	}
	var got []string
	q := drive.SearchQuery{Pattern: "*.jpg", Glob: true, Limit: 3}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("the cursor never ends")
		}
		pg, err := d.Search(ctx, u.ID, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range pg.Hits {
			got = append(got, n.Path)
		}
		if pg.Next == "" {
			break
		}
		q.Cursor = pg.Next
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("pages of *.jpg: %v, want %v", got, want)
	}
	// "*.jpg" without Glob is a substring with a literal '*': nothing.
	pg, err := d.Search(ctx, u.ID, drive.SearchQuery{Pattern: "*.jpg", Glob: false})
	if err != nil || len(pg.Hits) != 0 {
		t.Errorf("substring *.jpg: %v, %v; want no hit", pg.Hits, err)
	}
	first, err := d.Search(ctx, u.ID, drive.SearchQuery{Pattern: "img", Limit: 2})
	if err != nil || first.Next == "" {
		t.Fatalf("img page: %+v, %v", first, err)
	}
	for _, bad := range []drive.SearchQuery{
		{Pattern: ""},
		{Pattern: "x", Limit: -1},
		{Pattern: "x", Limit: drive.MaxSearchLimit + 1},
		{Pattern: "x", Cursor: "!!"},
		{Pattern: "x", Cursor: first.Next}, // another query's
		{Pattern: "x", Under: "/../.."},
		{Pattern: string([]byte{0xff})},
	} {
		if _, err := d.Search(ctx, u.ID, bad); errs.KindOf(err) != errs.Invalid {
			t.Errorf("Search(%+v) = %v, want Invalid", bad, err)
		}
	}
	if _, err := d.Search(ctx, u.ID, drive.SearchQuery{Pattern: "x", Under: "/nope"}); errs.KindOf(err) != errs.NotFound {
		t.Errorf("under a missing folder: %v, want NotFound", err)
	}
	if _, err := d.Search(ctx, u.ID, drive.SearchQuery{Pattern: "x", Under: "/notes.txt"}); errs.KindOf(err) != errs.NotDir {
		t.Errorf("under a file: %v, want NotDir", err)
	}
	pg, err = d.Search(ctx, u.ID, drive.SearchQuery{Pattern: "o", Under: "/Photos"})
	if err != nil || len(pg.Hits) != 0 {
		t.Errorf("o under /Photos: %v %v, want none (notes.txt is outside, the folder itself is not below itself)", pg.Hits, err)
	}
	pg, err = d.Search(ctx, u.ID, drive.SearchQuery{Pattern: "PHOTOS"})
	if err != nil || len(pg.Hits) != 1 || pg.Hits[0].Path != "/Photos" {
		t.Errorf("PHOTOS: %v %v, want the folder", pg.Hits, err)
	}
	if pg, err = d.Search(ctx, u.ID, drive.SearchQuery{Pattern: "PHOTOS", FilesOnly: true}); err != nil || len(pg.Hits) != 0 {
		t.Errorf("PHOTOS files only: %v %v, want none", pg.Hits, err)
	}
}
