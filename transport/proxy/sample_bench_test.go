package proxy

import (
	"fmt"
	"testing"

	"github.com/airouter/airouter/domain"
)

// BenchmarkSelectGroupSize is one pick in a group of n primaries with
// weights 1 to 4, a tenth of them banned and rpm limits on every window,
// by round-robin and by sampling: where the two cross is sampleMin.
//
//	go test ./transport/proxy -run '^$' -bench SelectGroupSize -benchmem
func BenchmarkSelectGroupSize(b *testing.B) {
	for _, n := range []int{2, 4, 8, 16, 32, 64, 128, 1000} {
		for _, mode := range []string{"round-robin", "sampling"} {
			b.Run(fmt.Sprintf("%d/%s", n, mode), func(b *testing.B) {
				pl, gate := largeBenchPool(b, n)
				pl.groups.samplers[0] = nil
				if mode == "sampling" {
					pl.groups.samplers[0] = newSampler(pl.cands, 0, pl.primary)
				}
				skip := newIdxSet(len(pl.cands))
				b.ReportAllocs()
				for b.Loop() {
					if pl.pick(gate, testNow, skip, epChat, &rejections{}) < 0 {
						b.Fatal("no pick")
					}
				}
			})
		}
	}
}

// largeBenchPool is a pool of n primaries named c0000... with weights 1 to
// 4, unlimited but counted windows, and a gate banning every tenth.
func largeBenchPool(b *testing.B, n int) (*pool, Gate) {
	specs := make([]string, n)
	for i := range specs {
		specs[i] = fmt.Sprintf("c%04d:%d", i, 1+i%4)
	}
	_, pl := testPool(b, specs...)
	gate := mapGate{}
	for i := range pl.cands {
		c := &pl.cands[i]
		c.pair.rpm, c.pair.tpm = 1<<40, 1<<50
		c.cred.limits.rpm, c.cred.limits.tpm = 1<<40, 1<<50
		if i%10 == 3 {
			gate[domain.Key{Credential: c.cred.name, Model: "m"}] = domain.Block{Reason: domain.BlockBanned, Permanent: true}
		}
	}
	return pl, gate
}
