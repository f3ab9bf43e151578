package domain

import "time"

// BlockReason says why routing skips a pair right now.
type BlockReason string

// Why a pair is not usable.
const (
	BlockBanned      BlockReason = "banned"
	BlockCoolingDown BlockReason = "cooling_down"
	BlockBenched     BlockReason = "benched"
)

// Block is the answer of a snapshot to "may this pair be routed to now?"
// when the answer is no. Until is when it becomes usable again (zero when
// Permanent); the failover loop uses the soonest Until of a model's
// candidates for Retry-After.
type Block struct {
	Reason    BlockReason
	Until     time.Time
	Permanent bool
	// Manual is true when an admin ban (on the pair or its whole
	// credential) is among the holds: panic routing never tries the pair.
	Manual bool
	// Probe is the pair's open recovery probe claim when the only hold is
	// an automatic ban of the pair that has one (nil otherwise): the
	// claiming replica may send one request through.
	Probe *ProbeClaim
}
