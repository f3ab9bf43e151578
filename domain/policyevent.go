package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"time"
)

// KindPolicyChanged: a replica announced the ban policy it was started or
// reloaded with, because it differed from the policy in force
// (Event.Policy). Every replica decides under the latest one on the log: the
// last change wins.
const KindPolicyChanged Kind = "policy.changed"

// PolicyChange is the payload of policy.changed: the whole ban policy as
// plain JSON (credential names only, never a key) and its fingerprint.
type PolicyChange struct {
	// Fingerprint names the policy: PolicyFingerprint of Policy.
	Fingerprint string `json:"fingerprint"`
	// Replica names the process that announced it.
	Replica string    `json:"replica,omitempty"`
	Policy  PolicyDoc `json:"policy"`
}

// PolicyDoc is a BanPolicy as written in the log: durations as Go duration
// strings, maps keyed by credential name and status code.
type PolicyDoc struct {
	Default            RuleDoc                  `json:"default"`
	Codes              []int                    `json:"error_codes"`
	Rules              map[string]RuleDoc       `json:"error_code_rules,omitempty"`
	Credentials        map[string]CredentialDoc `json:"credential_overrides,omitempty"`
	ProxyCredentials   []string                 `json:"proxy_credentials,omitempty"`
	Bench              BenchDoc                 `json:"model_bench"`
	MaxEjectionPercent int                      `json:"max_ejection_percent"`
	Cooldown           CooldownDoc              `json:"cooldown"`
	Recovery           RecoveryDoc              `json:"recovery"`
}

// RuleDoc is a Rule in the log.
type RuleDoc struct {
	MaxAttempts int      `json:"max_attempts"`
	Duration    Duration `json:"ban_duration"`
	Permanent   bool     `json:"permanent,omitempty"`
	Shadow      bool     `json:"shadow,omitempty"`
}

// CredentialDoc is a CredentialRules in the log.
type CredentialDoc struct {
	Codes  []int              `json:"error_codes,omitempty"`
	Rules  map[string]RuleDoc `json:"error_code_rules,omitempty"`
	Shadow bool               `json:"shadow,omitempty"`
}

// BenchDoc is a BenchPolicy in the log.
type BenchDoc struct {
	Failures int      `json:"failures"`
	Window   Duration `json:"window"`
	Duration Duration `json:"duration"`
}

// CooldownDoc is a CooldownPolicy in the log.
type CooldownDoc struct {
	RateLimitBase Duration `json:"rate_limit_base"`
	RateLimitMax  Duration `json:"rate_limit_max"`
	Auth          Duration `json:"auth"`
}

// RecoveryDoc is a RecoveryPolicy in the log.
type RecoveryDoc struct {
	ProbeAfter Duration `json:"probe_after"`
	ProbeMax   Duration `json:"probe_max"`
}

// NewPolicyChange is the policy.changed payload announcing p.
func NewPolicyChange(p BanPolicy, replica string) PolicyChange {
	d := DocOf(p)
	return PolicyChange{Fingerprint: d.Fingerprint(), Replica: replica, Policy: d}
}

// PolicyFingerprint is the fingerprint of p (PolicyDoc.Fingerprint of
// DocOf p): two policies that decide alike have the same one.
func PolicyFingerprint(p BanPolicy) string { return DocOf(p).Fingerprint() }

// Fingerprint is the first 12 hex digits of the SHA-256 of the document's
// JSON, which is canonical: fields in a fixed order, map keys sorted, lists
// sorted by DocOf.
func (d PolicyDoc) Fingerprint() string {
	b, _ := json.Marshal(d) // plain values: never fails
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// DocOf writes p as a PolicyDoc, with its lists sorted.
func DocOf(p BanPolicy) PolicyDoc {
	d := PolicyDoc{
		Default:            ruleDoc(p.Default),
		Codes:              sortedCodes(p.Codes),
		Rules:              ruleDocs(p.Rules),
		ProxyCredentials:   slices.Sorted(maps.Keys(proxyOnly(p.ProxyCredentials))),
		Bench:              BenchDoc{Failures: p.Bench.Failures, Window: Duration(p.Bench.Window), Duration: Duration(p.Bench.Duration)},
		MaxEjectionPercent: p.MaxEjectionPercent,
		Cooldown: CooldownDoc{RateLimitBase: Duration(p.Cooldown.RateLimitBase),
			RateLimitMax: Duration(p.Cooldown.RateLimitMax), Auth: Duration(p.Cooldown.Auth)},
		Recovery: RecoveryDoc{ProbeAfter: Duration(p.Recovery.ProbeAfter), ProbeMax: Duration(p.Recovery.ProbeMax)},
	}
	if len(p.Credentials) > 0 {
		d.Credentials = make(map[string]CredentialDoc, len(p.Credentials))
		for name, c := range p.Credentials {
			d.Credentials[name] = CredentialDoc{Codes: sortedCodes(c.Codes), Rules: ruleDocs(c.Rules), Shadow: c.Shadow}
		}
	}
	return d
}

// BanPolicy is the document as the domain value Decide reads. A rule keyed
// by anything but a status code is dropped (DocOf never writes one).
func (d PolicyDoc) BanPolicy() BanPolicy {
	p := BanPolicy{
		Default:            d.Default.rule(),
		Codes:              slices.Clone(d.Codes),
		Rules:              rules(d.Rules),
		Credentials:        make(map[string]CredentialRules, len(d.Credentials)),
		ProxyCredentials:   make(map[string]bool, len(d.ProxyCredentials)),
		Bench:              BenchPolicy{Failures: d.Bench.Failures, Window: time.Duration(d.Bench.Window), Duration: time.Duration(d.Bench.Duration)},
		MaxEjectionPercent: d.MaxEjectionPercent,
		Cooldown: CooldownPolicy{RateLimitBase: time.Duration(d.Cooldown.RateLimitBase),
			RateLimitMax: time.Duration(d.Cooldown.RateLimitMax), Auth: time.Duration(d.Cooldown.Auth)},
		Recovery: RecoveryPolicy{ProbeAfter: time.Duration(d.Recovery.ProbeAfter), ProbeMax: time.Duration(d.Recovery.ProbeMax)},
	}
	for name, c := range d.Credentials {
		p.Credentials[name] = CredentialRules{Codes: slices.Clone(c.Codes), Rules: rules(c.Rules), Shadow: c.Shadow}
	}
	for _, name := range d.ProxyCredentials {
		p.ProxyCredentials[name] = true
	}
	return p
}

func ruleDoc(r Rule) RuleDoc {
	return RuleDoc{MaxAttempts: r.MaxAttempts, Duration: Duration(r.Duration), Permanent: r.Permanent, Shadow: r.Shadow}
}

func (r RuleDoc) rule() Rule {
	return Rule{MaxAttempts: r.MaxAttempts, Duration: time.Duration(r.Duration), Permanent: r.Permanent, Shadow: r.Shadow}
}

func ruleDocs(m map[int]Rule) map[string]RuleDoc {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]RuleDoc, len(m))
	for code, r := range m {
		out[strconv.Itoa(code)] = ruleDoc(r)
	}
	return out
}

func rules(m map[string]RuleDoc) map[int]Rule {
	out := make(map[int]Rule, len(m))
	for k, r := range m {
		if code, err := strconv.Atoi(k); err == nil {
			out[code] = r.rule()
		}
	}
	return out
}

func sortedCodes(codes []int) []int {
	if len(codes) == 0 {
		return nil
	}
	return slices.Sorted(slices.Values(codes))
}

func proxyOnly(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		if v {
			out[k] = true
		}
	}
	return out
}
