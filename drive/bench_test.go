package drive_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"netdisk/dedup"
	"netdisk/drive"
	"netdisk/meta"
	"netdisk/quota"
)

// BenchmarkSmallPut measures the core cost of committing a 4 KiB file
// (hash, durable blob, one metadata transaction), without HTTP.
func BenchmarkSmallPut(b *testing.B) {
	f := newFixture(&testing.T{})
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
		w.Write(data)
		if _, err := w.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSmallPutDaemon is BenchmarkSmallPut wired as the daemon wires the
// drive: production chunk size and the quota ledger guard (embedded ledger),
// so a 4 KiB file is one short chunk reserved, stored and committed.
func BenchmarkSmallPutDaemon(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	m, err := meta.OpenSQLite(ctx, filepath.Join(dir, "meta.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	blobs, err := dedup.NewDiskStore(filepath.Join(dir, "chunks"))
	if err != nil {
		b.Fatal(err)
	}
	sink := quota.NewSQLiteSink(m, nil)
	g := quota.NewGuard(quota.NewMemory(quota.Config{Sink: sink}), sink, nil)
	d := drive.New(drive.Config{Meta: m, Blobs: blobs, Quota: g})
	u, err := d.AddUser(ctx, "alice", "pw-a", false, 0)
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Reconcile(ctx); err != nil {
		b.Fatal(err)
	}
	data := random(3, 4096)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		data[0], data[1], data[2] = byte(i), byte(i>>8), byte(i>>16)
		w, err := d.Create(ctx, u.ID, fmt.Sprintf("/f%d", i), drive.WriteOptions{ExpectedSize: 4096})
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
	f := newFixtureChunk(&testing.T{}, 4<<20)
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
			w.Write(data)
		}
		if _, err := w.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}
