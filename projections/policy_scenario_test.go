package projections

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
)

const policyDir = "../testdata/policy"

// policyCase is one testdata/policy/<name>: a ban policy, a log, and the
// outcomes whose decisions were lost.
type policyCase struct {
	name   string
	dir    string
	policy domain.BanPolicy
	events []domain.Event
	lost   map[uint64]bool
}

func loadPolicyCases(t *testing.T) []policyCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(policyDir, "*", "policy.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in %s: %v", policyDir, err)
	}
	var cases []policyCase
	for _, f := range files {
		dir := filepath.Dir(f)
		c := policyCase{name: filepath.Base(dir), dir: dir, policy: readPolicy(t, f), lost: map[uint64]bool{}}
		c.events = readEvents(t, filepath.Join(dir, "events.jsonl"))
		if raw, err := os.ReadFile(filepath.Join(dir, "lost.json")); err == nil {
			var seqs []uint64
			if err := json.Unmarshal(raw, &seqs); err != nil {
				t.Fatalf("%s/lost.json: %v", dir, err)
			}
			for _, seq := range seqs {
				if seq == 0 || seq > uint64(len(c.events)) || c.events[seq-1].Kind != domain.KindOutcomeRecorded {
					t.Fatalf("%s/lost.json: %d is not the line of an outcome", dir, seq)
				}
				c.lost[seq] = true
			}
		}
		cases = append(cases, c)
	}
	return cases
}

// run replays the case as the writer does: it folds each event, decides
// on every outcome from the Facts right after the fold, and folds the
// decisions back before the next event, as if they came back from the log
// at once, unless the outcome's decisions were lost (the case's lost.json:
// the decision queue was full or the publish failed). A lost decision that
// reached the log after all is a line of events.jsonl. The clock is the
// events' times. With cut >= 0 the state goes through a checkpoint after
// the first cut events, as a restarted replica's does.
func (c policyCase) run(t *testing.T, cut int) ([]domain.Event, *State) {
	t.Helper()
	s := NewState()
	var got []domain.Event
	for i, ev := range c.events {
		if i == cut {
			s = roundTrip(t, s)
		}
		s = Apply(s, ev)
		if ev.Kind != domain.KindOutcomeRecorded {
			continue
		}
		for _, d := range domain.Decide(c.policy, ev, s.Facts(ev)) {
			if err := d.Valid(); err != nil {
				t.Fatalf("line %d: decision %s is not valid: %v", ev.Seq, d.ID, err)
			}
			got = append(got, d)
			if !c.lost[ev.Seq] {
				s = Apply(s, d)
			}
		}
	}
	if cut == len(c.events) {
		s = roundTrip(t, s)
	}
	return got, s
}

func roundTrip(t *testing.T, s *State) *State {
	t.Helper()
	data, err := s.MarshalCheckpoint()
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalCheckpoint(data)
	if err != nil {
		t.Fatalf("read back a checkpoint at seq %d: %v", s.Seq(), err)
	}
	return back
}

// TestPolicyScenarios replays each testdata/policy/<case> through the
// projections and the policy and compares every decision with
// decisions.jsonl, and the state at the last event's time with view.json.
// Regenerate both with -update and review the diff.
func TestPolicyScenarios(t *testing.T) {
	for _, c := range loadPolicyCases(t) {
		t.Run(c.name, func(t *testing.T) {
			decisions, s := c.run(t, -1)
			var b bytes.Buffer
			for _, d := range decisions {
				enc, err := eventjson.Encode(d)
				if err != nil {
					t.Fatalf("encode %s: %v", d.ID, err)
				}
				b.Write(enc)
				b.WriteByte('\n')
			}
			view := viewJSON(t, s.Snapshot(), c.events[len(c.events)-1].At)
			checkGolden(t, filepath.Join(c.dir, "decisions.jsonl"), b.Bytes())
			checkGolden(t, filepath.Join(c.dir, "view.json"), view)
		})
	}
}

// TestPolicyScenariosAreDeterministic replays every case again, and once
// more through a checkpoint at every position, and expects the same
// decisions, ids included, and the same state: what every replica and
// every replay decides.
func TestPolicyScenariosAreDeterministic(t *testing.T) {
	for _, c := range loadPolicyCases(t) {
		t.Run(c.name, func(t *testing.T) {
			want, ws := c.run(t, -1)
			wantCkpt, err := ws.MarshalCheckpoint()
			if err != nil {
				t.Fatal(err)
			}
			for cut := -1; cut <= len(c.events); cut++ {
				got, s := c.run(t, cut)
				if g, w := encodeEvents(t, got), encodeEvents(t, want); g != w {
					t.Fatalf("checkpoint after %d events: decisions differ:\n got %s\nwant %s", cut, g, w)
				}
				if ckpt, _ := s.MarshalCheckpoint(); !bytes.Equal(ckpt, wantCkpt) {
					t.Fatalf("checkpoint after %d events: state differs:\n got %s\nwant %s", cut, ckpt, wantCkpt)
				}
			}
		})
	}
}

func encodeEvents(t *testing.T, evs []domain.Event) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range evs {
		enc, err := eventjson.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(enc)
		b.WriteByte('\n')
	}
	return b.String()
}

type ruleFile struct {
	Code        int    `json:"code"`
	MaxAttempts int    `json:"max_attempts"`
	BanDuration string `json:"ban_duration"`
	Enforce     *bool  `json:"enforce"`
}

type policyFile struct {
	MaxAttempts         int        `json:"max_attempts"`
	BanDuration         string     `json:"ban_duration"`
	ErrorCodes          []int      `json:"error_codes"`
	ErrorCodeRules      []ruleFile `json:"error_code_rules"`
	CredentialOverrides map[string]struct {
		ErrorCodes     []int      `json:"error_codes"`
		ErrorCodeRules []ruleFile `json:"error_code_rules"`
		Enforce        *bool      `json:"enforce"`
	} `json:"credential_overrides"`
	MaxEjectionPercent int `json:"max_ejection_percent"`
	Cooldown           struct {
		RateLimitBase domain.Duration `json:"rate_limit_base"`
		RateLimitMax  domain.Duration `json:"rate_limit_max"`
		Auth          domain.Duration `json:"auth"`
	} `json:"cooldown"`
	ProxyCredentials []string `json:"proxy_credentials"`
	Bench            struct {
		Failures int             `json:"failures"`
		Window   domain.Duration `json:"window"`
		Duration domain.Duration `json:"duration"`
	} `json:"bench"`
}

// readPolicy turns a fixture into a BanPolicy the way config does for the
// parts used here: "permanent" or "" is a permanent ban, and a rule without
// ban_duration inherits the top-level one.
func readPolicy(t *testing.T, path string) domain.BanPolicy {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pf policyFile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pf); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	top := policyRule(t, pf.MaxAttempts, pf.BanDuration, domain.Rule{Permanent: true})
	rules := func(rs []ruleFile) map[int]domain.Rule {
		m := map[int]domain.Rule{}
		for _, r := range rs {
			m[r.Code] = policyRule(t, r.MaxAttempts, r.BanDuration, top)
			if r.Enforce != nil && !*r.Enforce {
				rule := m[r.Code]
				rule.Shadow = true
				m[r.Code] = rule
			}
		}
		return m
	}
	p := domain.BanPolicy{Default: top, Codes: pf.ErrorCodes, Rules: rules(pf.ErrorCodeRules),
		Credentials: map[string]domain.CredentialRules{}, ProxyCredentials: map[string]bool{},
		Bench: domain.BenchPolicy{Failures: pf.Bench.Failures, Window: time.Duration(pf.Bench.Window),
			Duration: time.Duration(pf.Bench.Duration)}}
	for name, o := range pf.CredentialOverrides {
		p.Credentials[name] = domain.CredentialRules{Codes: o.ErrorCodes, Rules: rules(o.ErrorCodeRules),
			Shadow: o.Enforce != nil && !*o.Enforce}
	}
	p.MaxEjectionPercent = pf.MaxEjectionPercent
	p.Cooldown = domain.CooldownPolicy{RateLimitBase: time.Duration(pf.Cooldown.RateLimitBase),
		RateLimitMax: time.Duration(pf.Cooldown.RateLimitMax), Auth: time.Duration(pf.Cooldown.Auth)}
	for _, name := range pf.ProxyCredentials {
		p.ProxyCredentials[name] = true
	}
	return p
}

func policyRule(t *testing.T, maxAttempts int, d string, inherit domain.Rule) domain.Rule {
	t.Helper()
	switch d {
	case "":
		return domain.Rule{MaxAttempts: maxAttempts, Duration: inherit.Duration, Permanent: inherit.Permanent}
	case "permanent":
		return domain.Rule{MaxAttempts: maxAttempts, Permanent: true}
	}
	v, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("ban_duration %q: %v", d, err)
	}
	return domain.Rule{MaxAttempts: maxAttempts, Duration: v}
}
