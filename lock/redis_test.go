package lock_test

import (
	"fmt"
	"testing"

	"netdisk/lock"
	"netdisk/lock/locktest"
	"netdisk/testutil"
)

// TestRedis runs the suite on a real redis-server; each subtest gets its own
// prefix, and its two handles are two clients, as two daemons hold.
func TestRedis(t *testing.T) {
	r := testutil.StartRedis(t)
	n := 0
	locktest.Run(t, func(t *testing.T) (lock.State, lock.State) {
		n++
		prefix := fmt.Sprintf("t%d:", n)
		return lock.NewRedis(r.Client(), prefix), lock.NewRedis(r.Client(), prefix)
	})
}
