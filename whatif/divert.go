package whatif

import (
	"slices"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// Diverted is a request the window sent to a pair that the proposed rules
// had out of rotation at that moment, by a ban or a bench the actual run
// did not have.
type Diverted struct {
	Pos        string    `json:"pos"`
	At         time.Time `json:"at"`
	Credential string    `json:"credential"`
	Model      string    `json:"model"`
	RequestID  string    `json:"request_id,omitempty"`
	// BlockedBy is "ban" or "bench".
	BlockedBy string `json:"blocked_by"`
	// Outcome is "elsewhere" when another candidate of the model was
	// usable at that moment under the proposed state (To lists them), else
	// "failed".
	Outcome string   `json:"outcome"`
	To      []string `json:"to,omitempty"`
}

// What would have become of a diverted request.
const (
	WentElsewhere = "elsewhere"
	WouldFail     = "failed"
)

// divert records ev, an outcome about to be folded, when the proposed
// state had its pair out of rotation by a ban or bench of its own, unless
// the proposed policy had a recovery probe of the pair due then: the
// proposed router would have sent it as that probe (recovery.go).
func (r *Run) divert(ev domain.Event) {
	o := ev.Outcome
	t := ev.At
	if _, probe := r.proposed.state.DueProbe(o.Key(), t, r.opt.Policy.Recovery, whatifReplica); probe {
		return
	}
	f := r.proposed.state.Facts(ev)
	by := ""
	switch {
	case f.Banned && r.proposed.newBanAt(r.actual, o.Credential, o.Model, t):
		by = "ban"
	case f.BenchedUntil.After(t) && !slices.ContainsFunc(r.actual.benches[o.Model], f.BenchedUntil.Equal):
		by = "bench"
	default:
		return
	}
	d := Diverted{Pos: ev.Pos().String(), At: t.UTC(), Credential: o.Credential, Model: o.Model,
		RequestID: o.RequestID, BlockedBy: by, Outcome: WouldFail}
	snap := r.proposed.snapshot()
	for _, c := range r.candidates(o.Model) {
		if _, blocked := snap.Blocked(c, o.Model, t); c != o.Credential && !blocked {
			d.To = append(d.To, c)
		}
	}
	if len(d.To) > 0 {
		d.Outcome = WentElsewhere
	}
	r.diverted = append(r.diverted, d)
}

// newBanAt reports whether the ban f holds on the pair (or its credential)
// at t is one the actual run never had.
func (f *fold) newBanAt(actual *fold, cred, model string, t time.Time) bool {
	for _, k := range []domain.Key{{Credential: cred, Model: model}, {Credential: cred, Model: domain.AllModels}} {
		b := f.open[k]
		if b == nil || !b.activeAt(t) {
			continue
		}
		if !slices.ContainsFunc(actual.bans, b.same) {
			return true
		}
	}
	return false
}

// snapshot is the run's state as the router's selection reads it, built
// again only once what it blocks changed, from the one before (so it costs
// the records folded since, not the pool).
func (f *fold) snapshot() *projections.Snapshot {
	if f.snap == nil || f.stale {
		f.snap, f.stale = f.state.SnapshotAfter(f.snap), false
	}
	return f.snap
}
