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
	bin := testutil.Binary(t) // built first: the build is not the daemon's start
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "--data", data, "--listen", "127.0.0.1:0"}, args...)...)
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

// NETDISK_ADMIN_PASSWORD only sets the first admin's password, on an empty
// data directory. Set on a later start it is ignored, and the daemon says
// so in one log line instead of leaving the user to a 401; unset, or on the
// first start, nothing is said.
func TestServeSaysAdminPasswordIgnored(t *testing.T) {
	const ignored = "NETDISK_ADMIN_PASSWORD ignored"
	data := t.TempDir()
	launch := func(pass string) *testutil.Daemon {
		t.Helper()
		d, err := testutil.LaunchDaemon(context.Background(), testutil.DaemonConfig{Bin: testutil.Binary(t), DataDir: data, AdminPass: pass, LogLevel: "info"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(d.Stop)
		return d
	}
	signIn := func(d *testutil.Daemon, pass string) error {
		_, err := client.New(d.URL, "admin", pass).Quota(context.Background())
		return err
	}

	d := launch("first-pass")
	if strings.Contains(d.Logs(), ignored) {
		t.Fatalf("first start on an empty data directory said the password was ignored:\n%s", d.Logs())
	}
	if err := signIn(d, "first-pass"); err != nil {
		t.Fatalf("admin with the first password: %v", err)
	}
	d.Stop()

	d = launch("second-pass")
	var lines []string
	for _, l := range strings.Split(d.Logs(), "\n") {
		if strings.Contains(l, ignored) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "netdisk admin user passwd") {
		t.Fatalf("restart with another NETDISK_ADMIN_PASSWORD: want one warning saying it is ignored and how to change a password, got %q\n%s", lines, d.Logs())
	}
	if err := signIn(d, "second-pass"); client.StatusOf(err) != 401 {
		t.Fatalf("admin with the ignored password: %v, want 401", err)
	}
	if err := signIn(d, "first-pass"); err != nil {
		t.Fatalf("admin with the first password after the restart: %v", err)
	}
	d.Stop()

	d = launch("")
	if strings.Contains(d.Logs(), ignored) {
		t.Fatalf("restart without NETDISK_ADMIN_PASSWORD said it was ignored:\n%s", d.Logs())
	}
}

// serve --help says what a --redis that does not answer at start does: the
// daemon starts and waits for it (the behaviour server's
// TestRedisUnreachableAtStart checks on the real daemon).
func TestServeHelpSaysRedisAtStart(t *testing.T) {
	out, err := exec.Command(testutil.Binary(t), "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, out)
	}
	help := strings.Join(strings.Fields(string(out)), " ")
	for _, want := range []string{
		"a Redis that does not answer at start does not stop the daemon",
		"unreachable at start, the daemon serves and answers 503 what needs it until it answers",
	} {
		if !strings.Contains(help, want) {
			t.Errorf("serve --help lacks %q:\n%s", want, out)
		}
	}
}

// Bad thumbnail limits are refused at start with one line naming the flag,
// before anything is created; --help states the pixel budget.
func TestServeThumbFlags(t *testing.T) {
	for _, arg := range []string{"--thumb-max-mp=0", "--thumb-max-mp=5000", "--thumb-memory=10KiB", "--thumb-max-input=lots", "--thumb-cache-size=2TiB"} {
		data := filepath.Join(t.TempDir(), "data")
		msg := serveRefused(t, data, arg)
		flag, _, _ := strings.Cut(arg, "=")
		if strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "netdisk: "+flag+" ") {
			t.Fatalf("%s: output %q is not the one-line refusal", arg, msg)
		}
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			t.Fatalf("%s: the data directory was created before the refusal (%v)", arg, err)
		}
	}
	out, err := exec.Command(testutil.Binary(t), "serve", "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("serve --help: %v\n%s", err, out)
	}
	help := strings.Join(strings.Fields(string(out)), " ")
	if !strings.Contains(help, "largest image decoded, in megapixels") || !strings.Contains(help, "--thumb-max-mp float") || !strings.Contains(help, "(default 40)") {
		t.Errorf("serve --help does not state the thumbnails' pixel budget:\n%s", out)
	}
}
