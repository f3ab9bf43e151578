package domain

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func fullPolicy() BanPolicy {
	return BanPolicy{
		Default:            Rule{MaxAttempts: 3, Duration: time.Hour},
		Codes:              []int{500, 429, 401},
		Rules:              map[int]Rule{429: {MaxAttempts: 5, Duration: time.Minute, Shadow: true}, 401: {MaxAttempts: 1, Permanent: true}},
		Credentials:        map[string]CredentialRules{"b": {Codes: []int{503, 500}, Rules: map[int]Rule{503: {MaxAttempts: 2}}, Shadow: true}},
		ProxyCredentials:   map[string]bool{"p": true},
		Bench:              BenchPolicy{Failures: 4, Window: time.Minute, Duration: 2 * time.Minute},
		MaxEjectionPercent: 50,
		Cooldown:           CooldownPolicy{RateLimitBase: time.Second, RateLimitMax: time.Minute, Auth: 30 * time.Second},
		Recovery:           RecoveryPolicy{ProbeAfter: time.Minute, ProbeMax: time.Hour},
	}
}

// The log form carries every part of the policy: read back, it decides
// as the policy it was written from (codes sorted, which Watched ignores).
func TestPolicyDocRoundTrip(t *testing.T) {
	p := fullPolicy()
	b, err := json.Marshal(DocOf(p))
	if err != nil {
		t.Fatal(err)
	}
	var d PolicyDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	got := d.BanPolicy()
	want := p
	want.Codes = []int{401, 429, 500}
	want.Credentials = map[string]CredentialRules{"b": {Codes: []int{500, 503}, Rules: map[int]Rule{503: {MaxAttempts: 2}}, Shadow: true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back:\n%+v\nwant\n%+v\nfrom %s", got, want, b)
	}
	if d.Fingerprint() != PolicyFingerprint(p) {
		t.Fatal("the fingerprint changed through the log")
	}
}

// Policies that decide alike have one fingerprint; any change of a rule
// changes it.
func TestPolicyFingerprint(t *testing.T) {
	p := fullPolicy()
	q := fullPolicy()
	q.Codes = []int{401, 500, 429}
	if PolicyFingerprint(p) != PolicyFingerprint(q) {
		t.Fatal("the order of the watched codes changed the fingerprint")
	}
	if fp := PolicyFingerprint(p); len(fp) != 12 {
		t.Fatalf("fingerprint %q, want 12 hex digits", fp)
	}
	for name, change := range map[string]func(*BanPolicy){
		"max_attempts":  func(p *BanPolicy) { p.Default.MaxAttempts = 5 },
		"a code rule":   func(p *BanPolicy) { p.Rules[429] = Rule{MaxAttempts: 6} },
		"an override":   func(p *BanPolicy) { p.Credentials["b"] = CredentialRules{} },
		"the bench":     func(p *BanPolicy) { p.Bench.Failures = 0 },
		"the cap":       func(p *BanPolicy) { p.MaxEjectionPercent = 100 },
		"the ladder":    func(p *BanPolicy) { p.Cooldown.Auth = 0 },
		"the probes":    func(p *BanPolicy) { p.Recovery.ProbeAfter = 0 },
		"a proxy cred":  func(p *BanPolicy) { p.ProxyCredentials = nil },
		"a shadow rule": func(p *BanPolicy) { p.Default.Shadow = true },
	} {
		q := fullPolicy()
		change(&q)
		if PolicyFingerprint(q) == PolicyFingerprint(p) {
			t.Errorf("changing %s kept the fingerprint", name)
		}
	}
}
