// Package benchredis gives a benchmark the Redis its -redis flag names, or
// a private redis-server on a free loopback port when the flag is empty.
package benchredis

import (
	"flag"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	"netdisk/testutil"
)

// Flag defines the -redis flag Connect reads.
func Flag() *string {
	return flag.String("redis", "", "Redis URL (default: start redis-server on a free port)")
}

// Connect returns a client of the Redis at url, or of a private
// redis-server started for the run when url is ""; the URL it connected to;
// and stop, which closes the client and stops a private server (and removes
// its directory). A given server is left as it is.
func Connect(url string) (c *redis.Client, redisURL string, stop func(), err error) {
	if url != "" {
		opt, err := redis.ParseURL(url)
		if err != nil {
			return nil, "", nil, err
		}
		c := redis.NewClient(opt)
		return c, url, func() { c.Close() }, nil
	}
	dir, err := os.MkdirTemp("", "bench-redis-")
	if err != nil {
		return nil, "", nil, err
	}
	r, err := testutil.LaunchRedis(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, fmt.Errorf("%w (or pass -redis URL)", err)
	}
	// Many workers at once: a pool larger than go-redis's default.
	c = redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 32})
	return c, r.URL, func() { c.Close(); r.Kill(); os.RemoveAll(dir) }, nil
}
