package lock_test

import (
	"context"
	"strconv"
	"testing"

	"netdisk/lock"
)

// A subscriber that stops reading is cut off (its channel closed) rather
// than blocking the manager; the events it did get are in order.
func TestSlowSubscriberIsCutOff(t *testing.T) {
	ctx := context.Background()
	m, err := lock.NewManager(ctx, lock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	w := lock.Node{User: "1", ID: "w"}
	s := m.Subscribe(w)
	for i := range 200 {
		res := "r" + strconv.Itoa(i)
		h := lock.Node{User: "1", ID: "h"}
		if _, err := m.TryLock(ctx, "pull", res, h); err != nil {
			t.Fatal(err)
		}
		if r, err := m.TryLock(ctx, "pull", res, w); err != nil || r.Status != lock.Queued {
			t.Fatalf("%+v %v", r, err)
		}
		if err := m.Unlock(ctx, "pull", res, h, nil); err != nil { // wakes w
			t.Fatal(err)
		}
	}
	n := 0
	for ev := range s.C {
		if want := lock.Key("pull", "r"+strconv.Itoa(n)); ev.Key != want || ev.Type != lock.EventReleased {
			t.Fatalf("event %d: %+v, want released %s", n, ev, want)
		}
		n++
	}
	if n == 0 || n >= 200 {
		t.Fatalf("%d events before the cut, want some but not all 200", n)
	}
	// A new subscription works again.
	s2 := m.Subscribe(w)
	defer s2.Close()
	if _, err := m.TryLock(ctx, "pull", "x", lock.Node{User: "1", ID: "h"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(ctx, "pull", "x", w); err != nil {
		t.Fatal(err)
	}
	if err := m.Unlock(ctx, "pull", "x", lock.Node{User: "1", ID: "h"}, context.Canceled); err != nil {
		t.Fatal(err)
	}
	if ev := <-s2.C; ev.Type != lock.EventGranted {
		t.Fatalf("after re-subscribing: %+v", ev)
	}
}
