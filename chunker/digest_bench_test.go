package chunker

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"hash"
	"sync"
	"syscall"
	"testing"
	"time"

	md5simd "github.com/minio/md5-simd"
)

// BenchmarkDigests measures each digest an upload computes over its bytes,
// on this CPU, one stream at a time as a PUT hashes them: crypto/md5 (Go's
// assembly, no SIMD form of MD5 exists for a single stream), md5-pair (the
// chunk's and the file's MD5 in one interleaved pass: WriteMD5Pair; MB/s of
// input, so compare it with half of md5's), md5-simd (the
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
	b.Run("md5-pair", func(b *testing.B) {
		// Both MD5s an upload needs (chunk and file), in one interleaved
		// pass: MB/s of input, each byte into both digests.
		chunk, file := md5.New(), md5.New()
		b.SetBytes(int64(len(buf)))
		c0 := processCPU()
		for range b.N {
			chunk.Reset()
			WriteMD5Pair(chunk, file, buf)
			chunk.Sum(nil)
		}
		b.ReportMetric(float64(b.N*len(buf))/1e6/(processCPU()-c0).Seconds(), "cpu-MB/s")
	})
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

// BenchmarkMD5Lanes measures MD5 over k streams at once (k goroutines, each
// hashing its own 4 MiB in 64 KiB writes, as k uploads would): md5-simd,
// whose server fills AVX2/AVX-512 lanes with the streams' blocks, against
// crypto/md5. cpu-MB/s counts the bytes of all streams: where md5-simd's
// figure passes crypto/md5's, several streams would pay for it. go test -run
// XXX -bench MD5Lanes ./chunker/
func BenchmarkMD5Lanes(b *testing.B) {
	buf := make([]byte, 4<<20)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	streams := func(b *testing.B, k int, one func(i int)) {
		b.SetBytes(int64(k * len(buf)))
		c0 := processCPU()
		for range b.N {
			var wg sync.WaitGroup
			for i := range k {
				wg.Go(func() { one(i) })
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.N*k*len(buf))/1e6/(processCPU()-c0).Seconds(), "cpu-MB/s")
	}
	write := func(h hash.Hash) {
		h.Reset()
		for off := 0; off < len(buf); off += 64 << 10 {
			h.Write(buf[off : off+64<<10])
		}
		h.Sum(nil)
	}
	for _, k := range []int{1, 2, 4, 8, 16} {
		b.Run(fmt.Sprintf("md5-simd-%d", k), func(b *testing.B) {
			srv := md5simd.NewServer()
			defer srv.Close()
			hs := make([]md5simd.Hasher, k)
			for i := range hs {
				hs[i] = srv.NewHash()
				defer hs[i].Close()
			}
			streams(b, k, func(i int) { write(hs[i]) })
		})
		b.Run(fmt.Sprintf("md5-%d", k), func(b *testing.B) {
			streams(b, k, func(int) { write(md5.New()) })
		})
	}
}
