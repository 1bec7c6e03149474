package async_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"netdisk/async"
	"netdisk/async/storetest"
	"netdisk/meta"
	"netdisk/testutil"
)

func openEmbedded(t *testing.T, ttl time.Duration) async.Store {
	m, err := meta.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "meta.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return async.NewEmbedded(m, ttl)
}

func openRedis(t *testing.T, ttl time.Duration) async.Store {
	r := testutil.StartRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { rdb.Close() })
	return async.NewRedis(rdb, ttl)
}

func TestEmbeddedStore(t *testing.T) { storetest.Run(t, openEmbedded) }
func TestRedisStore(t *testing.T)    { storetest.Run(t, openRedis) }
