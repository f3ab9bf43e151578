package proxy

import (
	"fmt"
	"testing"

	"github.com/airouter/airouter/domain"
)

// BenchmarkSelect is the selection step alone: a pool of three primaries
// and a fallback, a gate holding a ban, rpm limits on every window.
func BenchmarkSelect(b *testing.B) {
	pl, gate := benchPool(b)
	skip := newIdxSet(len(pl.cands))
	b.ReportAllocs()
	for b.Loop() {
		skip[0] = 0
		if pl.pick(gate, testNow, skip, epChat, &rejections{}) < 0 {
			b.Fatal("no pick")
		}
	}
}

// BenchmarkSelectWindows compares selection with empty rate-limit windows
// and with every second of the 60 s windows holding traffic: the cost must
// not grow as the windows fill.
func BenchmarkSelectWindows(b *testing.B) {
	for _, fill := range []int{0, 60} {
		b.Run(fmt.Sprintf("filled-%ds", fill), func(b *testing.B) {
			pl, gate := benchPool(b)
			now := testNow
			for s := range fill {
				sec := now.Unix() - int64(fill-1-s)
				for i := range pl.cands {
					c := &pl.cands[i]
					for range 500 {
						c.reserve(sec)
					}
					c.charge(sec, 100_000)
				}
			}
			skip := newIdxSet(len(pl.cands))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				skip[0] = 0
				if pl.pick(gate, now, skip, epChat, nil) < 0 {
					b.Fatal("no pick")
				}
			}
		})
	}
}

func benchPool(b *testing.B) (*pool, Gate) {
	p, pl := testPool(b, "a:3", "b:2", "c:1", "f:1:fallback")
	for i := range pl.cands {
		pl.cands[i].pair.rpm, pl.cands[i].pair.tpm = 1<<40, 1<<50
		pl.cands[i].cred.limits.rpm, pl.cands[i].cred.limits.tpm = 1<<40, 1<<50
	}
	_ = p
	return pl, mapGate{{Credential: "c", Model: "m"}: {Reason: domain.BlockBanned, Permanent: true}}
}
