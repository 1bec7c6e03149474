// Package rediserr says once what a go-redis error means for netdisk, so
// that one Redis failure gets the same kind (and so the same HTTP status and
// errno) through every store kept in Redis: the quota ledger, the lock
// state, the async-download jobs and the WebDAV lock table. Each of them had
// its own rule, and a replica in failover (READONLY) was a 503 through the
// ledger but a 500 through the lock service.
//
// It only classifies; each store still words its own error (the ledger's
// errs.ErrLedgerUnreachable, the lock table's "unavailable").
package rediserr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"netdisk/errs"
)

// transient are the prefixes of the replies a healthy Redis gives while it
// cannot serve for a while: loading its data set, a replica or a master
// without replicas during failover, a cluster reconfiguring, a script
// running past its time limit, memory or client slots used up. Asking again
// later succeeds, so they are the dependency being down, not a bug.
var transient = []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "BUSY", "TRYAGAIN", "NOREPLICAS",
	"OOM", "ERR max number of clients"}

// Kind classifies a non-nil error returned by go-redis:
//   - the caller's context cancelled: errs.Canceled (nobody waits for the answer);
//   - a transient reply (above): errs.Unavailable;
//   - any other reply from the server (WRONGTYPE, a script error, an unknown
//     command): errs.Other, because the request was wrong and repeating it
//     will not help: a bug, logged as such;
//   - everything else (refused or lost connections, timeouts, a closed
//     client, a context deadline): errs.Unavailable.
func Kind(err error) errs.Kind {
	if errors.Is(err, context.Canceled) {
		return errs.Canceled
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range transient {
			if strings.HasPrefix(msg, p) {
				return errs.Unavailable
			}
		}
		return errs.Other
	}
	return errs.Unavailable
}

// Exec returns the error of a MULTI/EXEC (TxPipelined) with its cause: Redis
// refuses a whole transaction with a bare EXECABORT when a command was
// refused while being queued (READONLY during a failover, OOM), and the
// kind is that command's error's.
func Exec(cmds []redis.Cmder, err error) error {
	if err == nil || !strings.HasPrefix(err.Error(), "EXECABORT") {
		return err
	}
	for _, c := range cmds {
		var re redis.Error
		if cerr := c.Err(); errors.As(cerr, &re) && !strings.HasPrefix(cerr.Error(), "EXECABORT") {
			return fmt.Errorf("transaction aborted: %w", cerr)
		}
	}
	return err
}
