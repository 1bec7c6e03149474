package e2e

import (
	"testing"

	"netdisk/testutil"
)

// Identical content is stored once, whoever uploads it and under whatever name.
func TestDedupAcrossUsersAndNames(t *testing.T) {
	e := start(t)
	e.addUser("alice", "alice-pw")
	e.addUser("bob", "bob-pw")
	const size = 64 << 20
	data := testutil.RandBytes(size)

	e.put("alice", "alice-pw", "/dav/big.bin", data)
	after1, n1 := chunkStoreBytes(t, e.d.DataDir)
	if after1 < size || after1 > size+size/20 {
		t.Fatalf("after one 64 MiB upload the chunk store holds %d bytes in %d files, want ~%d", after1, n1, size)
	}

	e.put("bob", "bob-pw", "/dav/other-name.bin", data)
	after2, n2 := chunkStoreBytes(t, e.d.DataDir)
	if after2 != after1 || n2 != n1 {
		t.Fatalf("second user's identical upload grew the chunk store: %d bytes/%d files → %d/%d", after1, n1, after2, n2)
	}

	var st struct{ LogicalBytes, PhysicalBytes, Chunks int64 }
	e.admin("GET", "/api/v1/admin/stats", &st)
	if st.LogicalBytes != 2*size || st.PhysicalBytes != after1 {
		t.Errorf("stats: logical %d physical %d, want %d and %d", st.LogicalBytes, st.PhysicalBytes, 2*size, after1)
	}

	e.mkcol("alice", "alice-pw", "/dav/copies")
	e.put("alice", "alice-pw", "/dav/copies/again.bin", data)
	after3, n3 := chunkStoreBytes(t, e.d.DataDir)
	if after3 != after1 || n3 != n1 {
		t.Fatalf("same content under a second name grew the chunk store: %d bytes/%d files → %d/%d", after1, n1, after3, n3)
	}

	// All three names read back the same bytes.
	e.mustGet("alice", "alice-pw", "/dav/big.bin", data)
	e.mustGet("bob", "bob-pw", "/dav/other-name.bin", data)
	e.mustGet("alice", "alice-pw", "/dav/copies/again.bin", data)
}
