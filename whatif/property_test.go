package whatif

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

var t0 = time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)

// recorder writes a log as the router does: every outcome is folded and
// decided on at once under the policy in force (the latest policy.changed
// folded, else the recorder's own), its decisions stored right after it,
// and a ban past its until is recorded as lifted (by expiry) before the
// next event, as the expiry sweep does. With recovery probes on, an
// outcome on a pair whose probe is due is that probe: its claim is stored
// before it and, when it succeeded, the lift by recovery after its
// decisions (the decision engine's decideRecovery); the recorder routes no
// request by panic. Admin bans and unbans and policy changes are stored as
// they come.
type recorder struct {
	policy domain.BanPolicy
	state  *projections.State
	log    []domain.Event
	seq    uint64
	// sweepEvery, when set, spaces the expiry sweeps as the router's
	// (decisions sweeps every second) instead of one before every event.
	sweepEvery time.Duration
	swept      time.Time
}

func newRecorder(p domain.BanPolicy) *recorder {
	return &recorder{policy: p, state: projections.NewState()}
}

// store numbers ev, folds it and appends it to the log.
func (r *recorder) store(ev domain.Event) {
	r.seq++
	ev.Seq = r.seq
	r.state = projections.Apply(r.state, ev)
	r.log = append(r.log, ev)
}

// record stores ev after the expiries due by its time, then the decisions
// it leads to.
func (r *recorder) record(ev domain.Event) {
	if r.sweepEvery == 0 || !ev.At.Before(r.swept.Add(r.sweepEvery)) {
		r.swept = ev.At
		for _, lift := range r.state.ExpiredBans(ev.At) {
			r.store(lift)
		}
	}
	probe := false
	if ev.Kind == domain.KindOutcomeRecorded {
		if claim, ok := r.state.DueProbe(ev.Outcome.Key(), ev.At, r.policyInForce().Recovery, "r1"); ok {
			r.store(claim)
			probe = true
		}
	}
	r.store(ev)
	if ev.Kind != domain.KindOutcomeRecorded {
		return
	}
	stored := r.log[len(r.log)-1]
	decided := domain.Decide(r.policyInForce(), stored, r.state.Facts(stored))
	lift, lifted := r.state.RecoveryLift(stored)
	for _, d := range decided {
		r.store(d)
	}
	if lifted && probe {
		r.store(lift)
	}
}

// policyInForce is the latest policy.changed folded, else the recorder's.
func (r *recorder) policyInForce() domain.BanPolicy {
	if in := r.state.Policy(); in != nil {
		return in.Ban
	}
	return r.policy
}

var (
	genCred   = rapid.SampledFrom([]string{"a", "b", "c"})
	genModel  = rapid.SampledFrom([]string{"m1", "m2"})
	genStatus = rapid.SampledFrom([]int{200, 200, 200, 401, 429, 429, 500, 500, 503})
	genDur    = rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 2 * time.Minute, 10 * time.Minute})
)

// genPolicy draws a policy: thresholds, durations, per-code rules, a
// credential override, benching on or off.
func genPolicy(t *rapid.T) domain.BanPolicy {
	rule := func(label string) domain.Rule {
		d := genDur.Draw(t, label+" duration")
		return domain.Rule{MaxAttempts: rapid.IntRange(1, 4).Draw(t, label+" max"), Duration: d, Permanent: d == 0}
	}
	p := domain.BanPolicy{
		Default: rule("default"),
		Codes:   []int{401, 429, 500, 503},
		Rules:   map[int]domain.Rule{429: rule("429")},
		Credentials: map[string]domain.CredentialRules{
			"c": {Codes: []int{500}, Rules: map[int]domain.Rule{500: rule("c 500")}},
		},
		ProxyCredentials: map[string]bool{},
	}
	if rapid.Bool().Draw(t, "bench") {
		p.Bench = domain.BenchPolicy{Failures: rapid.IntRange(2, 4).Draw(t, "bench failures"), Window: time.Minute, Duration: 2 * time.Minute}
	}
	if rapid.Bool().Draw(t, "recovery") {
		p.Recovery = domain.RecoveryPolicy{ProbeAfter: rapid.SampledFrom([]time.Duration{time.Minute, 3 * time.Minute}).Draw(t, "probe after"),
			ProbeMax: 10 * time.Minute}
	}
	return p
}

// genInput draws the traffic and the admin actions of a log, in time
// order, with announcements of announced (a replica restarting with it)
// when it is set.
func genInput(t *rapid.T, announced *domain.BanPolicy) []domain.Event {
	n := rapid.IntRange(1, 120).Draw(t, "n")
	at := t0
	out := make([]domain.Event, 0, n)
	for i := 0; i < n; i++ {
		at = at.Add(time.Duration(rapid.IntRange(0, 90).Draw(t, "gap s")) * time.Second)
		ev := domain.Event{V: domain.SchemaVersion, At: at}
		switch rapid.IntRange(0, 9).Draw(t, "what") {
		case 2:
			if announced == nil {
				continue
			}
			ev.Kind, ev.ID = domain.KindPolicyChanged, "policy/"+at.Format(time.RFC3339)
			change := domain.NewPolicyChange(*announced, "r1")
			ev.Policy = &change
		case 0:
			d := genDur.Draw(t, "admin ban")
			ev.Kind, ev.ID = domain.KindBanImposed, "admin/"+at.Format(time.RFC3339)
			ev.Ban = &domain.Ban{Credential: genCred.Draw(t, "cred"), Model: rapid.SampledFrom([]string{"m1", "*"}).Draw(t, "model"),
				Origin: domain.OriginAdmin, Reason: "admin: test", Since: at, Permanent: d == 0}
			if d != 0 {
				until := at.Add(d)
				ev.Ban.Until = &until
			}
		case 1:
			ev.Kind = domain.KindBanLifted
			ev.Unban = &domain.Unban{Credential: genCred.Draw(t, "cred"), Model: rapid.SampledFrom([]string{"", "m1", "m2"}).Draw(t, "model"), By: domain.LiftedByAdmin}
		default:
			st := genStatus.Draw(t, "status")
			o := &domain.Outcome{Credential: genCred.Draw(t, "cred"), Model: genModel.Draw(t, "model"), Status: st,
				Class: domain.ClassifyStatus(st), Attempt: 1, RequestID: "r" + at.Format("150405")}
			if (st == 429 || st == 503) && rapid.Bool().Draw(t, "retry-after") {
				o.RetryAfterMS = int64(rapid.IntRange(1, 120).Draw(t, "retry s")) * 1000
			}
			ev.Kind, ev.Outcome = domain.KindOutcomeRecorded, o
		}
		out = append(out, ev)
	}
	return out
}

// Over logs recorded under a policy, whatif under that same policy
// changes no ban, diverts no request and counts the same pair-minutes,
// over the whole log and over a window of it.
func TestTheRecordedPolicyGivesAnEmptyDiff(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		policy := genPolicy(t)
		rec := newRecorder(policy)
		for _, ev := range genInput(t, &policy) {
			rec.record(ev)
		}
		res := runLog(t, Options{Policy: policy}, rec.log)
		checkEmpty(t, res)
		if len(rec.log) > 2 {
			mid := rec.log[rapid.IntRange(0, len(rec.log)-1).Draw(t, "window start")].At
			checkEmpty(t, runLog(t, Options{Policy: policy, From: mid}, rec.log))
		}
	})
}

func checkEmpty(t *rapid.T, res Result) {
	if !res.Diff.Empty() || len(res.Diverted) != 0 || res.Actual.PairMinutes != res.Proposed.PairMinutes {
		t.Fatalf("the recorded policy changes things:\nadded %s\nremoved %s\nchanged %d\ndiverted %+v\nminutes %v vs %v",
			bansText(res.Diff.Added), bansText(res.Diff.Removed), len(res.Diff.Changed), res.Diverted,
			res.Actual.PairMinutes, res.Proposed.PairMinutes)
	}
}

// runLog runs whatif over log as the command does: the state before the
// window folded as recorded, then the rest.
func runLog(t interface{ Fatal(...any) }, opt Options, log []domain.Event) Result {
	start := projections.NewState()
	i := 0
	for ; i < len(log) && !opt.From.IsZero() && log[i].At.Before(opt.From); i++ {
		start = projections.Apply(start, log[i])
	}
	run, err := New(opt, start)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range log[i:] {
		if !opt.Until.IsZero() && ev.At.After(opt.Until) {
			break
		}
		run.Add(ev)
	}
	return run.Result()
}

func bansText(bs []*Ban) string {
	var s string
	for _, b := range bs {
		s += "\n  " + banLine(b)
	}
	return s
}
