package drive_test

import (
	"context"
	"fmt"
	"testing"

	"netdisk/drive"
)

// BenchmarkSmallPut measures the core cost of committing a 4 KiB file wired
// as the daemon wires the drive (production chunk size, the quota ledger
// guard on the embedded ledger), without HTTP: one short chunk reserved,
// hashed, stored durably and committed in one metadata transaction.
func BenchmarkSmallPut(b *testing.B) {
	f := newFixtureChunk(b, 0)
	ctx := context.Background()
	data := random(1, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16)
		w, err := f.d.Create(ctx, f.a.ID, fmt.Sprintf("/f%d", i), drive.WriteOptions{ExpectedSize: 4096})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			b.Fatal(err)
		}
		if _, err := w.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLargePut measures the core write path of a 256 MiB file with the
// production chunk size (parallel hashing, durable blobs, one commit).
func BenchmarkLargePut(b *testing.B) {
	f := newFixtureChunk(b, 0)
	ctx := context.Background()
	data := random(2, 1<<20)
	b.SetBytes(256 << 20)
	for i := range b.N {
		w, err := f.d.Create(ctx, f.a.ID, "/big", drive.WriteOptions{ExpectedSize: -1})
		if err != nil {
			b.Fatal(err)
		}
		for j := range 256 {
			data[0], data[1], data[2] = byte(i), byte(j), 0x5a // new content every MiB
			if _, err := w.Write(data); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
