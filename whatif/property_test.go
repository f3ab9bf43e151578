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
// decided on under the policy at once, its decisions stored right after
// it, and a ban past its until is recorded as lifted (by expiry) before
// the next event, as the expiry sweep does. Admin bans and unbans are
// stored as they come.
type recorder struct {
	policy domain.BanPolicy
	state  *projections.State
	log    []domain.Event
	seq    uint64
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
	for _, lift := range r.state.ExpiredBans(ev.At) {
		r.store(lift)
	}
	r.store(ev)
	if ev.Kind != domain.KindOutcomeRecorded {
		return
	}
	stored := r.log[len(r.log)-1]
	for _, d := range domain.Decide(r.policy, stored, r.state.Facts(stored)) {
		r.store(d)
	}
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
	return p
}

// genInput draws the traffic and the admin actions of a log, in time order.
func genInput(t *rapid.T) []domain.Event {
	n := rapid.IntRange(1, 120).Draw(t, "n")
	at := t0
	out := make([]domain.Event, 0, n)
	for i := 0; i < n; i++ {
		at = at.Add(time.Duration(rapid.IntRange(0, 90).Draw(t, "gap s")) * time.Second)
		ev := domain.Event{V: domain.SchemaVersion, At: at}
		switch rapid.IntRange(0, 9).Draw(t, "what") {
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
		for _, ev := range genInput(t) {
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
