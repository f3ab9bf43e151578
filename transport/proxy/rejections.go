package proxy

import (
	"sync/atomic"

	"github.com/airouter/airouter/domain"
)

// Why selection skipped a candidate, as counted for
// auto_ai_router_credential_selection_rejected_total.
const (
	rejectBanned = iota
	rejectCoolingDown
	rejectBenched
	rejectRateLimited
	rejectReasons
)

var rejectNames = [rejectReasons]string{"banned", "cooling_down", "benched", "rate_limited"}

// rejections counts skipped candidates with plain atomics, so the hot path
// pays one atomic add per skip and no label lookup; the metrics read the
// totals at scrape time (Proxy.Rejections). A nil *rejections counts
// nothing.
type rejections struct {
	n [rejectReasons]atomic.Uint64
}

func (r *rejections) count(reason int) {
	if r != nil {
		r.n[reason].Add(1)
	}
}

func (r *rejections) countBlock(reason domain.BlockReason) {
	switch reason {
	case domain.BlockBanned:
		r.count(rejectBanned)
	case domain.BlockCoolingDown:
		r.count(rejectCoolingDown)
	case domain.BlockBenched:
		r.count(rejectBenched)
	}
}

// Rejections returns how many times selection skipped a candidate, by
// reason (banned, cooling_down, benched, rate_limited), since start.
func (p *Proxy) Rejections() map[string]uint64 {
	out := make(map[string]uint64, rejectReasons)
	for i, name := range rejectNames {
		out[name] = p.rejected.n[i].Load()
	}
	return out
}
