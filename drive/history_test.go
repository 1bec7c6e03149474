package drive_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"netdisk/drive"
	"netdisk/drive/drivetest"
	"netdisk/errs"
	"netdisk/meta"
	"netdisk/testutil"
)

// A deleted folder waits in the trash whole: its chunks survive GC, it is in
// no listing and not in the quota, and a restore gives back every byte.
func TestTrashDeleteRestore(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.a.ID
	files := map[string][]byte{}
	for i := range 5 {
		p := fmt.Sprintf("/docs/sub%d/f%d.bin", i%2, i)
		if err := f.d.MkdirAll(ctx, a, "/docs/sub"+fmt.Sprint(i%2)); err != nil {
			t.Fatal(err)
		}
		files[p] = random(int64(40+i), 3*testChunk+i)
		f.put(t, a, p, files[p])
	}
	before, err := f.d.QuotaOf(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.d.Remove(ctx, a, "/docs"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.d.Stat(ctx, a, "/docs/sub0/f0.bin"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("a deleted file is still at its path: %v", err)
	}
	if res, err := f.d.GC(ctx); err != nil || res.Chunks != 0 {
		t.Fatalf("GC with the folder in the trash = %+v, %v; want nothing collected", res, err)
	}
	q, _ := f.d.QuotaOf(ctx, a)
	if q.Finished != 0 || q.Metadata != 0 {
		t.Fatalf("the trash counts in the quota: %+v", q)
	}
	its, err := f.d.TrashList(ctx, a, 0, 10)
	if err != nil || len(its) != 1 || its[0].Path != "/docs" {
		t.Fatalf("trash = %+v, %v", its, err)
	}
	dst, err := f.d.RestoreTrash(ctx, a, its[0].ID)
	if err != nil || dst != "/docs" {
		t.Fatalf("restore = %q, %v", dst, err)
	}
	for p, want := range files {
		if got := f.get(t, a, p); !bytes.Equal(got, want) {
			t.Fatalf("%s differs after the restore", p)
		}
	}
	if q, _ := f.d.QuotaOf(ctx, a); q != before {
		t.Fatalf("quota after the restore %+v, before the delete %+v", q, before)
	}
	// Bob cannot see or restore alice's item: the same answer as for none.
	if _, err := f.d.RestoreTrash(ctx, f.b.ID, its[0].ID); !errs.Is(err, errs.NotFound) {
		t.Fatalf("bob restoring alice's item: %v", err)
	}
	// An expunge is what frees the chunks.
	if err := f.d.Remove(ctx, a, "/docs/sub1"); err != nil {
		t.Fatal(err)
	}
	its, _ = f.d.TrashList(ctx, a, 0, 10)
	if err := f.d.ExpungeTrash(ctx, a, its[0].ID); err != nil {
		t.Fatal(err)
	}
	if res, err := f.d.GC(ctx); err != nil || res.Chunks != 2*4 {
		t.Fatalf("GC after the expunge = %+v, %v; want the 8 chunks of two files", res, err)
	}
	for p, want := range files {
		if p[:10] == "/docs/sub0" && !bytes.Equal(f.get(t, a, p), want) {
			t.Fatalf("%s lost bytes to GC", p)
		}
	}
	if fs, err := f.d.Fsck(ctx, nil); err != nil || len(fs.Problems) != 0 {
		t.Fatalf("fsck = %+v, %v", fs, err)
	}
}

// A replace with a folder on either side sends what was there to the trash.
func TestTrashFolderReplace(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.a.ID
	old := random(7, 2*testChunk)
	if err := f.d.MkdirAll(ctx, a, "/d"); err != nil {
		t.Fatal(err)
	}
	f.put(t, a, "/d/old.bin", old)
	f.put(t, a, "/file.bin", random(8, 10))
	if err := f.d.Move(ctx, a, "/file.bin", "/d", true); err != nil {
		t.Fatal(err)
	}
	its, _ := f.d.TrashList(ctx, a, 0, 10)
	if len(its) != 1 || its[0].Path != "/d" || !its[0].IsDir {
		t.Fatalf("trash after a file moved over a folder: %+v", its)
	}
	if err := f.d.MkdirAll(ctx, a, "/e"); err != nil {
		t.Fatal(err)
	}
	if err := f.d.Copy(ctx, a, "/e", "/d", true, true); err != nil {
		t.Fatal(err)
	}
	its, _ = f.d.TrashList(ctx, a, 0, 10)
	if len(its) != 2 || its[0].Path != "/d" || its[0].IsDir {
		t.Fatalf("trash after a folder copied over a file: %+v", its)
	}
	dst, err := f.d.RestoreTrash(ctx, a, its[1].ID)
	if err != nil || dst != "/d (restored)" || !bytes.Equal(f.get(t, a, "/d (restored)/old.bin"), old) {
		t.Fatalf("restore = %q, %v", dst, err)
	}
}

// Retention runs on the drive's clock; past the history share the oldest
// items go first; a restore that does not fit the quota is refused.
func TestTrashRetentionAndShare(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	e := drivetest.New(t, drivetest.Options{ChunkSize: testChunk, Clock: clock, History: func(c *drive.Config) {
		c.TrashRetention = 7 * 24 * time.Hour
		c.HistoryShare = 0.5
	}})
	f := &fixture{d: e.Drive, m: e.Meta, dir: e.Dir}
	ctx := context.Background()
	const total = 40 * testChunk
	a := e.AddUser(t, "alice", total).ID
	for i := range 4 {
		f.put(t, a, fmt.Sprintf("/f%d", i), random(int64(i), 6*testChunk))
	}
	for i := range 4 {
		clock.Advance(time.Hour)
		if err := f.d.Remove(ctx, a, fmt.Sprintf("/f%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// 24 chunks in the trash, the share is 20: the oldest item goes.
	res, err := f.d.ExpireHistory(ctx)
	if err != nil || res.Expired != 0 || res.OverShare != 1 {
		t.Fatalf("history pass over the share = %+v, %v", res, err)
	}
	its, _ := f.d.TrashList(ctx, a, 0, 10)
	if len(its) != 3 || its[2].Path != "/f1" {
		t.Fatalf("trash after the share pass: %+v", its)
	}
	// The trash is not in the quota: the whole total is free for files.
	bigSize := total - 2*meta.EntryCharge("big")
	f.put(t, a, "/big", random(9, int(bigSize)))
	if _, err := f.d.RestoreTrash(ctx, a, its[0].ID); !errs.Is(err, errs.Quota) {
		t.Fatalf("restore past the quota: %v", err)
	}
	clock.Advance(7*24*time.Hour - time.Hour)
	if res, err := f.d.ExpireHistory(ctx); err != nil || res.Expired != 1 {
		t.Fatalf("history pass at 7 days of the second delete = %+v, %v", res, err)
	}
	clock.Advance(24 * time.Hour)
	if res, err := f.d.ExpireHistory(ctx); err != nil || res.Expired != 2 {
		t.Fatalf("history pass a day later = %+v, %v", res, err)
	}
	if its, _ := f.d.TrashList(ctx, a, 0, 10); len(its) != 0 {
		t.Fatalf("trash after retention: %+v", its)
	}
	// Only /big holds chunks any more: GC takes all the others.
	if _, err := f.d.GC(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := f.d.Stats(ctx); err != nil || st.Chunks != (bigSize+testChunk-1)/testChunk {
		t.Fatalf("after retention and GC: %+v, %v", st, err)
	}
}

// TestHistoryShareCountsVersions: trash items and file versions share one
// bound, and past it the oldest of either kind goes first.
func TestHistoryShareCountsVersions(t *testing.T) {
	clock := testutil.NewClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))
	e := drivetest.New(t, drivetest.Options{ChunkSize: testChunk, Clock: clock, History: func(c *drive.Config) {
		c.HistoryShare = 0.5
	}})
	f := &fixture{d: e.Drive, m: e.Meta, dir: e.Dir}
	ctx := context.Background()
	const total = 40 * testChunk
	a := e.AddUser(t, "alice", total).ID
	// Four saves of /doc, an hour apart: three versions of 6 chunks.
	for i := range 4 {
		clock.Advance(time.Hour)
		f.put(t, a, "/doc", random(int64(10+i), 6*testChunk))
	}
	// A newer trash item of 6 chunks: 24 chunks of history, the share is 20.
	f.put(t, a, "/old", random(20, 6*testChunk))
	clock.Advance(time.Hour)
	if err := f.d.Remove(ctx, a, "/old"); err != nil {
		t.Fatal(err)
	}
	res, err := f.d.ExpireHistory(ctx)
	if err != nil || res.OverShare != 1 {
		t.Fatalf("history pass over the share = %+v, %v", res, err)
	}
	_, vs, err := f.d.FileVersions(ctx, a, "/doc")
	if err != nil || len(vs) != 2 {
		t.Fatalf("versions after the share pass: %+v, %v", vs, err)
	}
	for _, v := range vs {
		if v.Saved.Equal(time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC)) {
			t.Fatalf("the oldest version survived, not the oldest history: %+v", vs)
		}
	}
	if its, _ := f.d.TrashList(ctx, a, 0, 10); len(its) != 1 {
		t.Fatalf("the newer trash item went before an older version: %+v", its)
	}
}
