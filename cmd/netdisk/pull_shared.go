package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"netdisk/apitype"
	"netdisk/client"
)

// sharedPull runs `netdisk pull --shared-cache`: the pull coordinated with
// the other nodes sharing the cache folder (client.SharedPull).
func sharedPull(ctx context.Context, c *client.Client, remote, local, cache, node string, o client.PullOptions,
	mode outputMode, enc *json.Encoder, stderr io.Writer) (client.PullResult, error) {
	if node == "" {
		host, _ := os.Hostname()
		node = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	so := client.SharedPullOptions{Cache: cache, Node: node, OnProgress: o.OnProgress,
		OnWait: func(a apitype.LockAnswer) {
			switch mode {
			case outJSON:
				enc.Encode(map[string]any{"type": "lock", "event": a.Event, "status": a.Status, "position": a.Position})
			case outBar:
				if a.Status == apitype.LockQueued {
					fmt.Fprintf(stderr, "another node is pulling this file; waiting (position %d)\n", a.Position)
				}
			}
		}}
	res, err := c.SharedPull(ctx, remote, local, so)
	if err == nil && mode == outJSON {
		enc.Encode(map[string]any{"type": "shared", "node": node, "fetched": res.Fetched, "fromCache": res.FromCache, "refused": res.Refused})
	}
	return res.PullResult, err
}
