package rediserr_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/async"
	"netdisk/davlock"
	"netdisk/errs"
	"netdisk/internal/rediserr"
	"netdisk/lock"
	"netdisk/quota"
	"netdisk/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// readOnlyReplica starts two real redis-servers and makes the second a
// replica of the first: every write to it is refused with READONLY, as
// during a failover.
func readOnlyReplica(t *testing.T) *redis.Client {
	t.Helper()
	master, replica := testutil.StartRedis(t), testutil.StartRedis(t)
	host, port, _ := net.SplitHostPort(master.Addr)
	rdb := replica.Client()
	if err := rdb.Do(context.Background(), "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	return rdb
}

// TestKind: each class of go-redis error, produced by a real redis-server.
func TestKind(t *testing.T) {
	ctx := context.Background()
	rs := testutil.StartRedis(t)
	rdb := rs.Client()
	if err := rdb.Set(ctx, "s", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	readOnly := readOnlyReplica(t).Set(ctx, "k", "v", 0).Err()
	if !strings.HasPrefix(readOnly.Error(), "READONLY") {
		t.Fatalf("a write to a replica answered %v; want READONLY", readOnly)
	}
	cases := []struct {
		name string
		err  error
		want errs.Kind
	}{
		{"read-only replica", readOnly, errs.Unavailable},
		{"wrong type", rdb.LPush(ctx, "s", "y").Err(), errs.Other},
		{"script error", rdb.Eval(ctx, "return redis.call('NOSUCHCOMMAND')", nil).Err(), errs.Other},
		{"cancelled", rdb.Get(cancelled, "s").Err(), errs.Canceled},
	}
	for _, c := range cases {
		if c.err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		if got := rediserr.Kind(c.err); got != c.want {
			t.Errorf("%s (%v): kind %v; want %v", c.name, c.err, got, c.want)
		}
	}

	rs.Kill()
	if err := rdb.Get(ctx, "s").Err(); err == nil || rediserr.Kind(err) != errs.Unavailable {
		t.Errorf("server killed: %v, kind %v; want Unavailable", err, rediserr.Kind(err))
	}
}

// TestStoresAgree: a Redis that cannot take writes (a replica during a
// failover) is Unavailable (503) through every store kept in Redis: one
// outage, one answer, whichever store meets it first.
func TestStoresAgree(t *testing.T) {
	ctx := context.Background()
	rdb := readOnlyReplica(t)
	now := time.Now()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	writes := map[string]func() error{
		"quota ledger": func() error {
			// Forget writes without reading the ledger's epoch first (which
			// this empty replica lacks: the ledger would call it lost).
			return quota.NewRedis(rdb, "", quota.Config{}).Forget(ctx, 1)
		},
		"lock state": func() error {
			_, err := lock.NewRedis(rdb, "").TryLock(ctx, "pull:x", lock.Node{User: "1", ID: "a"},
				lock.Limits{Lease: time.Minute, MultiNode: true, MaxQueue: 8, MaxUserWait: 8}, now)
			return err
		},
		"async jobs": func() error {
			_, err := async.NewRedis(rdb, time.Hour).CreateJob(ctx, async.Job{ID: "AsyncDownloadJob:1:/f:1", User: 1, Path: "/f"}, now)
			return err
		},
		"WebDAV locks": func() error {
			_, err := davlock.NewRedis(rdb, "", func() time.Time { return now }, log).Create(1,
				davlock.Lock{Root: "/f", Timeout: time.Minute})
			return err
		},
	}
	for name, write := range writes {
		err := write()
		if err == nil {
			t.Errorf("%s: a write to a read-only replica succeeded", name)
			continue
		}
		var re redis.Error
		if !errors.As(err, &re) {
			t.Errorf("%s: %v is not Redis's reply", name, err)
		}
		if k := errs.KindOf(err); k != errs.Unavailable {
			t.Errorf("%s: %v has kind %v; want Unavailable (503)", name, err, k)
		}
	}
}
