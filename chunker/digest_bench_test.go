package chunker

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"hash"
	"syscall"
	"testing"
	"time"

	md5simd "github.com/minio/md5-simd"
)

// BenchmarkDigests measures each digest an upload computes over its bytes,
// on this CPU, one stream at a time as a PUT hashes them: crypto/md5 (Go's
// assembly, no SIMD form of MD5 exists for a single stream), md5-simd (the
// S3 client's; AVX2/AVX-512 lanes of several streams, so one stream waits
// on a lane), crypto/sha1 and crypto/sha256 (SHA-NI where the CPU has it).
// MB/s per stream, and MB per CPU-second of the process (cpu-MB/s: what
// counts on a shared machine, where the wall-clock rate varies with the
// load): go test -run XXX -bench Digests ./chunker/
func BenchmarkDigests(b *testing.B) {
	buf := make([]byte, 4<<20) // one chunk
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	run := func(name string, h hash.Hash) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(buf)))
			c0 := processCPU()
			for range b.N {
				h.Reset()
				h.Write(buf)
				h.Sum(nil)
			}
			b.ReportMetric(float64(b.N*len(buf))/1e6/(processCPU()-c0).Seconds(), "cpu-MB/s")
		})
	}
	run("md5", md5.New())
	srv := md5simd.NewServer()
	defer srv.Close()
	simd := srv.NewHash()
	defer simd.Close()
	run("md5-simd", simd)
	run("sha1", sha1.New())
	run("sha256", sha256.New())
}

// processCPU is the process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
