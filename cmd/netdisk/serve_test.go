package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"netdisk/client"
	"netdisk/testutil"
)

// serveRefused runs `netdisk serve` on data with args, which must make it
// exit 1 at start, and returns what it printed, trimmed.
func serveRefused(t *testing.T, data string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, testutil.Binary(t), append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("%s: %v, want exit 1\n%s", strings.Join(args, " "), err, out.String())
	}
	return strings.TrimSpace(out.String())
}

// A chunk size that is not a multiple of 4 KiB (seed 004) is refused at start
// with one line, before anything is created; a multiple of it is accepted.
func TestServeRefusesChunkSizeNotMultipleOf4KiB(t *testing.T) {
	for _, size := range []string{"100000", "65537", "66KiB"} {
		data := filepath.Join(t.TempDir(), "data")
		msg := serveRefused(t, data, "--chunk-size", size)
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "netdisk: --chunk-size") || !strings.Contains(msg, "multiple of 4KiB") {
			t.Fatalf("--chunk-size %s: output %q is not the one-line refusal", size, msg)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("--chunk-size %s: the data directory was created before the refusal (%v)", size, err)
		}
	}

	d := testutil.StartDaemon(t, "--chunk-size", "68KiB")
	info, err := client.New(d.URL, "admin", d.AdminPass).Info(context.Background())
	if err != nil || info.ChunkSize != 68<<10 {
		t.Fatalf("--chunk-size 68KiB: chunk size %d, %v", info.ChunkSize, err)
	}
}

// A bad instant upload mode or owner range is refused at start with one line
// naming the flag, before anything is created.
func TestServeRefusesBadInstantUploadFlags(t *testing.T) {
	for _, arg := range []string{"--instant-upload=public", "--instant-upload-owners=5-2", "--instant-upload-owners=0-3", "--instant-upload-owners=x"} {
		data := filepath.Join(t.TempDir(), "data")
		msg := serveRefused(t, data, arg)
		flag, _, _ := strings.Cut(arg, "=")
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "netdisk: "+flag+":") {
			t.Fatalf("%s: output %q is not the one-line refusal", arg, msg)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("%s: the data directory was created before the refusal (%v)", arg, err)
		}
	}
}

// --trusted-proxies takes addresses and CIDRs; anything else is refused at
// start with one line naming the flag, before anything is created.
func TestServeTrustedProxiesFlag(t *testing.T) {
	for _, arg := range []string{"--trusted-proxies=proxy.example", "--trusted-proxies=10.0.0.0/40"} {
		data := filepath.Join(t.TempDir(), "data")
		msg := serveRefused(t, data, arg)
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "netdisk: --trusted-proxies:") {
			t.Fatalf("%s: output %q is not the one-line refusal", arg, msg)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("%s: the data directory was created before the refusal (%v)", arg, err)
		}
	}
	testutil.StartDaemon(t, "--trusted-proxies", "127.0.0.1,10.0.0.0/8,::1")
}
