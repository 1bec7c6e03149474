package daemon

import (
	"context"
	"strings"
	"testing"
)

// A node on a shared metadata store refuses to start without Redis, and
// says why.
func TestSharedMetaNeedsRedis(t *testing.T) {
	_, err := Open(context.Background(), Options{DataDir: t.TempDir(), Meta: "postgres://127.0.0.1:1/netdisk"})
	if err == nil || !strings.Contains(err.Error(), "--redis is required") {
		t.Fatalf("Open with a shared --meta and no --redis: %v; want a refusal naming --redis", err)
	}
}
