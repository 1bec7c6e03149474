package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// VersityGWVersion is the S3 server the tests run (posix mode: buckets are
// directories of a temp dir). It is built once into VersityGWDir.
const VersityGWVersion = "v1.8.0"

// S3 test credentials: versitygw's root user.
const (
	S3AccessKey = "netdisk-test"
	S3SecretKey = "netdisk-test-secret"
)

// VersityGWDir is where the built versitygw binary is cached between runs.
func VersityGWDir() string {
	if d := os.Getenv("NETDISK_TOOLS"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "netdisk", "bin")
}

// S3 is a real S3 server (versitygw) on a free loopback port.
type S3 struct {
	Endpoint string // 127.0.0.1:PORT
	dir      string
	bin      string
	proc     *proc
	buckets  atomic.Int64
}

var sharedS3 = shared[*S3]{launch: LaunchS3}

// versityGW returns the versitygw binary, building it (about two minutes)
// when it is not cached yet.
func versityGW() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	bin := filepath.Join(VersityGWDir(), "versitygw")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "install", "github.com/versity/versitygw/cmd/versitygw@"+VersityGWVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+VersityGWDir(), "GOFLAGS=-buildvcs=false")
	cmd.Dir = os.TempDir() // outside this module: its own go.mod decides
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build versitygw %s: %v\n%s", VersityGWVersion, err, out)
	}
	return bin, nil
}

// SharedS3 returns the test binary's S3 server, starting it on first use,
// and sets the AWS credential variables netdisk reads to its root user's.
// TestMain stops it (Main). A server that cannot be had skips the test
// locally and fails it under CI.
func SharedS3(t *testing.T) *S3 {
	t.Helper()
	s, err := sharedS3.get()
	if err != nil {
		if InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", S3AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", S3SecretKey)
	return s
}

// StartS3 starts a private S3 server for a test that takes it away (Kill,
// Restart); it is stopped at cleanup and sets the credentials as SharedS3
// does.
func StartS3(t *testing.T) *S3 {
	t.Helper()
	s, err := LaunchS3()
	if err != nil {
		if InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(s.Stop)
	t.Setenv("AWS_ACCESS_KEY_ID", S3AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", S3SecretKey)
	return s
}

// Kill kills the server (SIGKILL) and waits for it, keeping its buckets on
// disk: until Restart, its address refuses connections, as an S3 outage.
func (s *S3) Kill() { s.proc.kill(syscall.SIGKILL) }

// Pause stops the server (SIGSTOP) without closing its connections: until
// Resume, requests to it hang, as a stalled S3 does.
func (s *S3) Pause() { s.proc.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *S3) Resume() { s.proc.cmd.Process.Signal(syscall.SIGCONT) }

// Restart starts a killed server again on its address, with its buckets.
func (s *S3) Restart(t testing.TB) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if err = s.start(s.bin, s.Endpoint); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // the port may linger a moment
	}
	t.Fatalf("restart versitygw: %v", err)
}

// LaunchS3 starts versitygw in posix mode over a temp dir; the caller stops
// it (Stop).
func LaunchS3() (*S3, error) {
	bin, err := versityGW()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "netdisk-s3-")
	if err != nil {
		return nil, err
	}
	s := &S3{dir: dir, bin: bin}
	if err := onFreePort(func(addr string) error { return s.start(bin, addr) }); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start versitygw: %w", err)
	}
	return s, nil
}

func (s *S3) start(bin, addr string) error {
	s.Endpoint = addr
	c, err := s.Client()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "--port", addr, "--access", S3AccessKey, "--secret", S3SecretKey, "--quiet",
		"posix", s.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if s.proc, err = startProc("versitygw", cmd, nil); err != nil {
		return err
	}
	return s.proc.waitReady(context.Background(), 20*time.Second, 20*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.ListBuckets(ctx)
		return err
	})
}

// Client is an S3 client as the root user, for tests to look into buckets.
func (s *S3) Client() (*minio.Client, error) {
	return minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(S3AccessKey, S3SecretKey, ""),
		Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
}

// NewBucket creates an empty bucket and returns the --blobs URL for it.
func (s *S3) NewBucket(t testing.TB) (url, bucket string) {
	t.Helper()
	url, bucket, err := s.CreateBucket(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return url, bucket
}

// CreateBucket creates an empty bucket and returns the --blobs URL for it
// (for programs such as the benchmarks; tests use NewBucket).
func (s *S3) CreateBucket(ctx context.Context) (url, bucket string, err error) {
	bucket = fmt.Sprintf("netdisk-%d", s.buckets.Add(1))
	c, err := s.Client()
	if err != nil {
		return "", "", err
	}
	if err := c.MakeBucket(ctx, bucket, minio.MakeBucketOptions{Region: "us-east-1"}); err != nil {
		return "", "", fmt.Errorf("make bucket: %w", err)
	}
	return fmt.Sprintf("s3://%s?endpoint=%s&region=us-east-1&insecure=1", bucket, s.Endpoint), bucket, nil
}

// Stop kills the server and removes its directory.
func (s *S3) Stop() {
	s.proc.end()
	os.RemoveAll(s.dir)
}
