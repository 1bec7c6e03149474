package upload

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkInstantUploadBandwidth measures what private mode costs in
// bandwidth: a mixed workload is pushed as the client pipeline pushes (file
// hash first, then per chunk) in each mode, and the content bytes sent are
// compared with what shared mode sends. Each iteration is one run of the
// whole workload per mode; thresholds are drawn afresh each run, so use a
// few iterations:
//
//	go test -run '^$' -bench InstantUploadBandwidth -benchtime 5x ./upload/
//
// The workload, 12 users, chunks of testChunk bytes:
//   - personal files: 5 unique files per user (1-8 chunks);
//   - own copies: each user uploads 2 of their files again under another name;
//   - popular files: 3 files (8 chunks) every user uploads (an installer, a
//     shared dataset);
//   - team files: 4 files (4 chunks) each uploaded by the 3 users of a team;
//   - versions: 6 users upload an edited version of a popular file (its last
//     chunk changed), which shares all other chunks with it.
func BenchmarkInstantUploadBandwidth(b *testing.B) {
	modes := []InstantMode{InstantShared, InstantPrivate, InstantOff}
	sent := make(map[InstantMode]int64)
	var total int64 // logical bytes over the runs (the same in every mode)
	for range b.N {
		seed := rand.Uint64()
		for _, mode := range modes {
			s, l := runMixedWorkload(b, mode, seed)
			sent[mode] += s
			if mode == InstantShared {
				total += l
			}
		}
	}
	n := float64(b.N)
	logical := float64(total) / n
	shared := float64(sent[InstantShared]) / n
	b.ReportMetric(logical, "logical-B/run")
	for _, mode := range modes {
		s := float64(sent[mode]) / n
		b.ReportMetric(s, "sent-"+mode.String()+"-B/run")
		b.ReportMetric(100*(s-shared)/logical, "extra-"+mode.String()+"-%logical")
	}
	private, off := float64(sent[InstantPrivate])/n, float64(sent[InstantOff])/n
	b.Logf("%d run(s), per run: logical %.0f B; sent: shared %.0f B, private %.0f B (+%.0f B = %.1f%% of logical, %.2fx shared), off %.0f B (+%.0f B = %.1f%%)",
		b.N, logical, shared, private, private-shared, 100*(private-shared)/logical, private/shared, off, off-shared, 100*(off-shared)/logical)
}

// runMixedWorkload pushes the workload (same content and order for a seed)
// in mode and returns the content bytes sent and the logical bytes uploaded.
func runMixedWorkload(b *testing.B, mode InstantMode, seed uint64) (sent, logical int64) {
	b.StopTimer()
	e := newEnvWith(b, nil, Instant{Mode: mode})
	b.StartTimer()
	r := rand.New(rand.NewPCG(seed, 1))
	content := func(chunks int) []byte {
		out := make([]byte, chunks*testChunk-r.IntN(testChunk/2))
		for i := range out {
			out[i] = byte(r.Uint32())
		}
		return out
	}
	const users = 12
	uids := make([]int64, users)
	for i := range uids {
		uids[i] = e.member(fmt.Sprintf("user%d", i))
	}
	push := func(uid int64, path string, data []byte) {
		s, _ := e.push(uid, path, data)
		sent += s
		logical += int64(len(data))
	}
	popular := [][]byte{content(8), content(8), content(8)}
	teams := [][]byte{content(4), content(4), content(4), content(4)}
	for i, uid := range uids {
		var mine [][]byte
		for j := range 5 {
			f := content(1 + r.IntN(8))
			mine = append(mine, f)
			push(uid, fmt.Sprintf("/personal/%d", j), f)
		}
		for j := range 2 {
			push(uid, fmt.Sprintf("/personal/copy%d", j), mine[j])
		}
		for j, f := range popular {
			push(uid, fmt.Sprintf("/popular/%d", j), f)
		}
		if t := i / 3; t < len(teams) {
			push(uid, "/team/doc", teams[t])
		}
		if i%2 == 0 {
			v := append([]byte(nil), popular[0]...)
			copy(v[len(v)-10:], "edited!!!!")
			push(uid, "/popular/0-edited", v)
		}
	}
	return sent, logical
}
