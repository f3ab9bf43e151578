// Package whatif answers "what would these ban rules have done?" over a
// window of the event log. It folds the window's events twice with the
// projections' own fold: as recorded (the actual run), and under a proposed
// domain.BanPolicy (the proposed run), where the recorded automatic
// decisions are dropped and domain.Decide, the router's one policy, decides
// on every outcome instead, its decisions folded right after the outcome.
// It then sets the bans of the two runs side by side.
//
// What is replayed as recorded in the proposed run: outcomes (with the
// Retry-After each carries), manual bans and unbans, manual unbenches,
// settings changes, and every other event the policy does not decide.
// What is policy, dropped and decided again: automatic bans, the expiry
// of bans (the proposed run records its own, at the first event past a
// ban's until, as the router's sweep does), cooldowns (an upstream's
// Retry-After is a fact, recorded in its outcome, that Decide honours in
// both runs; the cooldown event is how the policy acts on it, and the
// rate-limit ladder and auth cooldowns are policy outright), model
// benches, withheld and shadow bans, probe claims and lifts by recovery
// (decided again from the recorded successes, see recovery.go). Outcomes
// are replayed as recorded:
// what an upstream would have answered to traffic sent elsewhere is not
// invented.
//
// It is pure over a sequence of events (it reads no clock, no log, no
// config); the command reads the log and the policy file and hands it the
// events in log order.
package whatif

import (
	"container/heap"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// Assumption is what every answer states beside its numbers.
const Assumption = "outcomes are replayed as recorded; what an upstream would have answered to traffic sent elsewhere is not invented; " + RecoveryAssumption

// Options configure a Run.
type Options struct {
	// Policy is the proposed policy Decide applies in the proposed run.
	Policy domain.BanPolicy
	// From and Until bound the window by the events' own times (zero: the
	// first and the last event read). Events before From are folded as
	// recorded into both runs (the state the window starts from); the
	// caller stops at the first event stamped after Until.
	From, Until time.Time
	// Candidates, when set, lists the credentials that serve a model (the
	// config's routes). Without it, a model's candidates are the
	// credentials the events read so far show serving it.
	Candidates func(model string) []string
}

// Run folds a log's events into the actual and the proposed run. Add takes
// events in log order; Result reads what the two runs did. A Run is used
// by one goroutine.
type Run struct {
	opt              Options
	actual, proposed *fold
	outcomes         int
	first, last      time.Time
	served           map[string][]string // model -> credentials seen, in order seen
	seen             map[domain.Key]bool // the pairs in served
	diverted         []Diverted
}

// fold is one of the two runs: its state and the bans and benches it made.
type fold struct {
	state   *projections.State
	bans    []*Ban
	open    map[domain.Key]*Ban // the ban on each key, from the fold's reports
	benches map[string][]time.Time
	// snap is the state's latest snapshot; stale once what it blocks
	// changed, when the next one is built from it (SnapshotAfter).
	snap  *projections.Snapshot
	stale bool
	// sweeps is set for the proposed run, which ends its own bans (the
	// actual run folds the recorded lifts); ends then queues the open bans
	// that end, earliest first.
	sweeps bool
	ends   banEnds
}

func newFold(start *projections.State, sweeps bool) *fold {
	return &fold{state: start, sweeps: sweeps, open: map[domain.Key]*Ban{}, benches: map[string][]time.Time{}}
}

// New starts a run from start, the state as recorded just before the
// window (projections.NewState for a log read from its beginning). start
// is copied for the proposed run, so the caller may not use it afterwards.
func New(opt Options, start *projections.State) (*Run, error) {
	if start == nil {
		start = projections.NewState()
	}
	data, err := start.MarshalCheckpoint()
	if err != nil {
		return nil, err
	}
	twin, err := projections.UnmarshalCheckpoint(data)
	if err != nil {
		return nil, err
	}
	r := &Run{opt: opt, actual: newFold(start, false), proposed: newFold(twin, true), served: map[string][]string{}, seen: map[domain.Key]bool{}}
	snap := start.Snapshot()
	for model, b := range snap.Benched(opt.From) {
		for _, f := range []*fold{r.actual, r.proposed} {
			f.benches[model] = append(f.benches[model], b.Until.UTC())
		}
	}
	for _, b := range snap.Bans(opt.From) {
		for _, f := range []*fold{r.actual, r.proposed} {
			f.noteOpen(&Ban{Credential: b.Credential, Model: b.Model, Origin: b.Origin, Reason: b.Reason,
				ErrorCode: b.ErrorCode, Since: b.Since, Until: b.Until, Permanent: b.Permanent})
		}
	}
	return r, nil
}

// Add folds the next event of the log into both runs.
func (r *Run) Add(ev domain.Event) {
	if ev.Seq > 0 && !r.actual.state.Pos().Before(ev.Pos()) {
		return // already in the state the run started from
	}
	inWindow := r.opt.From.IsZero() || !ev.At.Before(r.opt.From)
	if ev.Kind == domain.KindOutcomeRecorded && ev.Outcome != nil {
		r.serve(ev.Outcome.Credential, ev.Outcome.Model)
		if inWindow {
			r.outcomes++
			r.divert(ev)
		}
	}
	if inWindow && ev.Kind != "" {
		if r.first.IsZero() {
			r.first = ev.At.UTC()
		}
		if ev.At.After(r.last) { // a decision stored late may be stamped earlier
			r.last = ev.At.UTC()
		}
	}
	panicked := inWindow && r.panicLift(ev) // read before the actual run folds it
	r.actual.apply(ev, ev.Kind == domain.KindModelBenched)
	if !inWindow {
		r.proposed.apply(ev, ev.Kind == domain.KindModelBenched)
		return
	}
	if policyDecision(ev) {
		if panicked {
			r.liftAsRecorded(ev)
		}
		return
	}
	r.proposed.sweep(ev.At)
	probe := ev.Kind == domain.KindOutcomeRecorded && r.claimProbe(ev)
	r.proposed.apply(ev, false)
	if ev.Kind != domain.KindOutcomeRecorded {
		return
	}
	decided := domain.Decide(r.opt.Policy, ev, r.proposed.state.Facts(ev))
	lift, lifted := r.recovery(ev, probe) // decided on the same state, as the router does
	for _, d := range decided {
		r.proposed.apply(d, d.Kind == domain.KindModelBenched)
	}
	if lifted {
		r.proposed.apply(lift, false)
	}
}

// sweep ends the bans of the run that are past their until at t, as the
// router's expiry sweep does: with the ban.lifted events projections
// derive for them, folded before the event at t. It takes the ended bans
// off the fold's queue of ends, so an event costs the bans that end at
// it, not the open ones or the pool.
func (f *fold) sweep(t time.Time) {
	var ended []domain.Key
	for len(f.ends) > 0 && !f.ends[0].Until.After(t) {
		b := heap.Pop(&f.ends).(*Ban)
		if k := b.key(); f.open[k] == b {
			ended = append(ended, k)
		}
	}
	for _, ev := range f.state.ExpiredBansOn(ended, t) {
		f.apply(ev, false)
	}
}

// banEnds is a min-heap of bans by their until (container/heap). A ban
// lifted or replaced stays queued and is skipped when it comes up.
type banEnds []*Ban

func (h banEnds) Len() int           { return len(h) }
func (h banEnds) Less(i, j int) bool { return h[i].Until.Before(*h[j].Until) }
func (h banEnds) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *banEnds) Push(x any)        { *h = append(*h, x.(*Ban)) }
func (h *banEnds) Pop() any {
	old := *h
	b := old[len(old)-1]
	*h = old[:len(old)-1]
	return b
}

// policyDecision reports whether a recorded event is a decision of the
// recorded policy, which the proposed run drops and decides again: an
// automatic ban, the expiry of a ban (the proposed run sweeps its own), a
// cooldown (the Retry-After it honours is in the recorded outcome, and
// Decide honours it again; ladder and auth cooldowns are the policy's),
// a bench, a ban the ejection cap withheld or a shadow rule's ban; and a
// recorded policy.changed, since the proposed run decides under the
// proposed policy throughout (the actual run folds it as recorded); and
// recovery: probe claims and lifts by recovery, which the proposed run
// decides again (recovery.go).
func policyDecision(ev domain.Event) bool {
	switch ev.Kind {
	case domain.KindBanImposed:
		return ev.Ban != nil && ev.Ban.Origin != domain.OriginAdmin
	case domain.KindBanLifted:
		return ev.Unban != nil && (ev.Unban.By == domain.LiftedByExpiry || ev.Unban.By == domain.LiftedByRecovery)
	case domain.KindCooldownStarted, domain.KindModelBenched, domain.KindBanWithheld, domain.KindBanShadowed,
		domain.KindPolicyChanged, domain.KindProbeClaimed, domain.KindCooldownLifted:
		return true
	}
	return false
}

// apply folds ev and records the bans it imposed and ended, and, with
// bench, the model bench it carries.
func (f *fold) apply(ev domain.Event, bench bool) {
	var ch projections.Change
	f.state, ch = projections.ApplyReport(f.state, ev)
	if ev.Kind != domain.KindOutcomeRecorded || len(ch.Bans) > 0 {
		// An outcome changes counters and failure windows, which do not
		// take a pair out of rotation, unless it ended a ban.
		f.stale = true
	}
	for _, c := range ch.Bans {
		switch c.Kind {
		case projections.BanImposed:
			b := &Ban{ID: c.ID, Credential: c.Ban.Credential, Model: c.Ban.Model, Origin: c.Ban.Origin,
				Reason: c.Ban.Reason, ErrorCode: c.Ban.ErrorCode, Since: c.Ban.Since.UTC(),
				Until: c.Ban.Until, Permanent: c.Ban.Permanent}
			f.noteOpen(b)
		case projections.BanLifted, projections.BanReplaced:
			if b := f.open[c.Key()]; b != nil {
				at := ev.At.UTC()
				if b.Lifted == nil && (b.Permanent || b.Until == nil || at.Before(*b.Until)) {
					b.Lifted = &at
				}
				delete(f.open, c.Key())
			}
		case projections.BanExpired:
			delete(f.open, c.Key())
		}
	}
	if bench && ev.Bench != nil {
		f.benches[ev.Bench.Model] = append(f.benches[ev.Bench.Model], ev.Bench.Until.UTC())
	}
}

// noteOpen records b as the ban on its key and in the run's list.
func (f *fold) noteOpen(b *Ban) {
	if b.Until != nil {
		u := b.Until.UTC()
		b.Until = &u
	}
	f.bans = append(f.bans, b)
	f.open[b.key()] = b
	if f.sweeps && !b.Permanent && b.Until != nil {
		heap.Push(&f.ends, b)
	}
}

// serve notes that cred served model.
func (r *Run) serve(cred, model string) {
	if k := (domain.Key{Credential: cred, Model: model}); !r.seen[k] {
		r.seen[k] = true
		r.served[model] = append(r.served[model], cred)
	}
}

// candidates are the credentials that serve model.
func (r *Run) candidates(model string) []string {
	if r.opt.Candidates != nil {
		return r.opt.Candidates(model)
	}
	return r.served[model]
}
