package daemon

import (
	"context"
	"io"
	"testing"
	"time"

	"netdisk/async"
	"netdisk/errs"
)

// Deleting a user through the daemon ends their async downloads: their
// tasks and jobs leave the store at once, not at their expiry.
func TestDeleteUserEndsAsyncDownloads(t *testing.T) {
	ctx := context.Background()
	d, err := Open(ctx, Options{DataDir: t.TempDir(), AdminPass: "admin-pass", Out: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	bob, err := d.Drive.AddUser(ctx, "bob", "bob-pass", false, 0)
	if err != nil {
		t.Fatal(err)
	}
	store := async.NewEmbedded(d.Meta, 0) // the daemon's own store: the same tables
	now := time.Now()
	job := async.JobKey(bob.ID, "/f", async.Bucket(now, async.DefaultWindow))
	task := async.TaskKey(bob.ID, "/f", "uuid")
	if _, err := store.CreateJob(ctx, async.Job{ID: job, User: bob.ID, Path: "/f", Status: async.Pending}, now); err != nil {
		t.Fatal(err)
	}
	if err := store.PutTask(ctx, async.Task{ID: task, JobID: job, User: bob.ID, Path: "/f", Agent: "a"}, now); err != nil {
		t.Fatal(err)
	}
	if err := d.Drive.DeleteUser(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Job(ctx, job, now); !errs.Is(err, errs.NotFound) {
		t.Fatalf("the deleted user's job: %v, want NotFound", err)
	}
	if _, err := store.Task(ctx, task, now); !errs.Is(err, errs.NotFound) {
		t.Fatalf("the deleted user's task: %v, want NotFound", err)
	}
}
