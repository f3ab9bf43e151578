package domain

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/policy/*/decisions.jsonl from the current policy")

// TestDecideScenarios replays each testdata/policy/<case>/events.jsonl (seq =
// line number) through a minimal stand-in for the projections fold, runs
// Decide after every outcome as the writer does, folds the decisions back
// before the next event, and compares every decision with
// decisions.jsonl. The policy is policy.json, written like the fail2ban
// block of the config.
func TestDecideScenarios(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("..", "testdata", "policy", "*", "policy.json"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no scenarios in testdata/policy: %v", err)
	}
	for _, dir := range dirs {
		dir = filepath.Dir(dir)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			p := readPolicy(t, filepath.Join(dir, "policy.json"))
			var got []Event
			s := newScenarioFold()
			for i, ev := range readEvents(t, filepath.Join(dir, "events.jsonl")) {
				ev.Seq = uint64(i + 1)
				f := s.apply(ev)
				if ev.Kind != KindOutcomeRecorded {
					continue
				}
				for _, d := range Decide(p, ev, f) {
					got = append(got, d)
					s.apply(d)
				}
			}
			golden := filepath.Join(dir, "decisions.jsonl")
			g := encodeAll(t, got)
			if *update {
				if err := os.WriteFile(golden, []byte(g), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("read %s (run with -update to create it): %v", golden, err)
			}
			if g != string(want) {
				t.Fatalf("decisions differ from %s:\n got:\n%s\nwant:\n%s", golden, g, want)
			}
		})
	}
}

type ruleFile struct {
	Code        int    `json:"code"`
	MaxAttempts int    `json:"max_attempts"`
	BanDuration string `json:"ban_duration"`
}

type policyFile struct {
	MaxAttempts         int        `json:"max_attempts"`
	BanDuration         string     `json:"ban_duration"`
	ErrorCodes          []int      `json:"error_codes"`
	ErrorCodeRules      []ruleFile `json:"error_code_rules"`
	CredentialOverrides map[string]struct {
		ErrorCodes     []int      `json:"error_codes"`
		ErrorCodeRules []ruleFile `json:"error_code_rules"`
	} `json:"credential_overrides"`
	ProxyCredentials []string `json:"proxy_credentials"`
	Bench            struct {
		Failures int      `json:"failures"`
		Window   Duration `json:"window"`
		Duration Duration `json:"duration"`
	} `json:"bench"`
}

// readPolicy turns a fixture into a BanPolicy the way config does for the
// parts used here: "permanent" or "" is a permanent ban, and a rule without
// ban_duration inherits the top-level one.
func readPolicy(t *testing.T, path string) BanPolicy {
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
	top := rule(t, pf.MaxAttempts, pf.BanDuration, Rule{Permanent: true})
	rules := func(rs []ruleFile) map[int]Rule {
		m := map[int]Rule{}
		for _, r := range rs {
			m[r.Code] = rule(t, r.MaxAttempts, r.BanDuration, top)
		}
		return m
	}
	p := BanPolicy{Default: top, Codes: pf.ErrorCodes, Rules: rules(pf.ErrorCodeRules),
		Credentials: map[string]CredentialRules{}, ProxyCredentials: map[string]bool{},
		Bench: BenchPolicy{Failures: pf.Bench.Failures, Window: time.Duration(pf.Bench.Window),
			Duration: time.Duration(pf.Bench.Duration)}}
	for name, o := range pf.CredentialOverrides {
		p.Credentials[name] = CredentialRules{Codes: o.ErrorCodes, Rules: rules(o.ErrorCodeRules)}
	}
	for _, name := range pf.ProxyCredentials {
		p.ProxyCredentials[name] = true
	}
	return p
}

func rule(t *testing.T, maxAttempts int, d string, inherit Rule) Rule {
	t.Helper()
	switch d {
	case "":
		return Rule{MaxAttempts: maxAttempts, Duration: inherit.Duration, Permanent: inherit.Permanent}
	case "permanent":
		return Rule{MaxAttempts: maxAttempts, Permanent: true}
	}
	v, err := time.ParseDuration(d)
	if err != nil {
		t.Fatalf("ban_duration %q: %v", d, err)
	}
	return Rule{MaxAttempts: maxAttempts, Duration: v}
}

func readEvents(t *testing.T, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []Event
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		ev, err := Decode(sc.Bytes())
		if err == nil {
			err = ev.Valid()
		}
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// scenarioFold is the least of the projections fold that Decide needs, so
// the fixtures can be replayed here: per-code counters that a 2xx clears,
// outcomes ignored on a banned pair, counters cleared when a ban ends, and a
// model's bench-countable failures (cleared by any success).
type scenarioFold struct {
	counts    map[Key]map[int]int
	bans      map[Key]Ban
	cooldowns map[Key]time.Time
	failures  map[string][]ModelFailure
	benched   map[string]time.Time
}

func newScenarioFold() *scenarioFold {
	return &scenarioFold{counts: map[Key]map[int]int{}, bans: map[Key]Ban{},
		cooldowns: map[Key]time.Time{}, failures: map[string][]ModelFailure{}, benched: map[string]time.Time{}}
}

// apply folds ev and returns the Facts of its pair after the fold (zero for
// anything but an outcome).
func (s *scenarioFold) apply(ev Event) Facts {
	switch ev.Kind {
	case KindBanImposed:
		s.bans[ev.Ban.Key()] = *ev.Ban
	case KindBanLifted:
		for k := range s.bans {
			if k.Credential == ev.Unban.Credential && (ev.Unban.Model == "" || k.Model == ev.Unban.Model) {
				delete(s.bans, k)
				delete(s.counts, k)
			}
		}
	case KindCooldownStarted:
		s.cooldowns[ev.Cooldown.Key()] = ev.Cooldown.Until
	case KindModelBenched:
		s.benched[ev.Bench.Model] = ev.Bench.Until
	case KindOutcomeRecorded:
		return s.applyOutcome(ev)
	}
	return Facts{}
}

func (s *scenarioFold) applyOutcome(ev Event) Facts {
	o := ev.Outcome
	k := o.Key()
	var f Facts
	for _, bk := range []Key{k, {Credential: k.Credential, Model: AllModels}} {
		b, ok := s.bans[bk]
		switch {
		case ok && b.ActiveAt(ev.At):
			f.Banned = true
			f.BanPermanent = f.BanPermanent || b.Permanent
			if b.Until != nil && b.Until.After(f.BanUntil) {
				f.BanUntil = *b.Until
			}
		case ok:
			delete(s.bans, bk)
			delete(s.counts, k)
		}
	}
	switch {
	case f.Banned:
	case o.Success():
		delete(s.counts, k)
		delete(s.failures, o.Model)
	case o.Code() != 0:
		if s.counts[k] == nil {
			s.counts[k] = map[int]int{}
		}
		s.counts[k][o.Code()]++
	}
	if !f.Banned && o.Class.CountsForBench() {
		s.failures[o.Model] = append(s.failures[o.Model], ModelFailure{Credential: o.Credential, At: ev.At, Seq: ev.Seq})
	}
	f.Counts = s.counts[k]
	f.CooldownUntil = s.cooldowns[k]
	f.ModelFailures = s.failures[o.Model]
	f.BenchedUntil = s.benched[o.Model]
	return f
}
