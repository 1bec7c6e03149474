package lock_test

import (
	"testing"

	"netdisk/lock"
	"netdisk/lock/locktest"
)

func TestMemory(t *testing.T) {
	locktest.Run(t, func(t *testing.T) (lock.State, lock.State) {
		m := lock.NewMemory()
		return m, m
	})
}
