package domain

import (
	"strconv"
	"time"
)

// KindProbeClaimed: a replica claimed one recovery probe of an automatic
// ban: the one live request the ban lets through in that interval
// (Event.Probe). Its id is ProbeClaimID, so of the replicas claiming the
// same interval the log keeps one.
const KindProbeClaimed Kind = "probe.claimed"

// LiftedByRecovery: a request that reached a pair under an automatic ban (a
// recovery probe or a panic-routed request) succeeded, so the ban it names
// (Unban.BanID) is lifted.
const LiftedByRecovery LiftedBy = "recovery"

// ProbeClaim is one claimed recovery probe: replica Replica may let one
// request through to the pair, banned by ban BanID, in interval Interval
// (0 for the first probe after the ban).
type ProbeClaim struct {
	Credential string `json:"credential"`
	Model      string `json:"model"`
	BanID      string `json:"ban_id"`
	Interval   int    `json:"interval"`
	// Replica names the process that claimed the probe; only it sends
	// the probe.
	Replica string `json:"replica"`
}

// Key returns the pair the probe is for.
func (p ProbeClaim) Key() Key { return Key{Credential: p.Credential, Model: p.Model} }

// ProbeClaimID is the id of the claim of probe interval n of ban banID:
// every replica claiming that interval publishes the same id.
func ProbeClaimID(banID string, n int) string { return "probe/" + banID + "/" + strconv.Itoa(n) }

// RecoveryID is the id of the event that lifts ban banID by recovery, so
// every replica deciding the lift publishes the same id.
func RecoveryID(banID string) string { return "recovery/" + banID }

// RecoveryPolicy is fail2ban.recovery: when automatic bans get a probe.
// ProbeAfter 0 turns probes off.
type RecoveryPolicy struct {
	ProbeAfter time.Duration
	ProbeMax   time.Duration
}

// On reports whether automatic bans are probed.
func (p RecoveryPolicy) On() bool { return p.ProbeAfter > 0 }

// Gap is the wait before probe interval n: ProbeAfter for the first (after
// the ban), then twice the previous gap, capped at ProbeMax (when it is
// positive).
func (p RecoveryPolicy) Gap(n int) time.Duration {
	g := p.ProbeAfter
	for i := 0; i < n; i++ {
		if p.ProbeMax > 0 && g >= p.ProbeMax {
			break
		}
		if g >= time.Duration(1<<62) {
			break // doubling would pass the largest Duration
		}
		g *= 2
	}
	if p.ProbeMax > 0 && g > p.ProbeMax {
		g = p.ProbeMax
	}
	return g
}
