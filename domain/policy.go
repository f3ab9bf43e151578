package domain

import "time"

// Rule is how many failures with one status code ban a pair, and for how
// long. Permanent bans never expire; otherwise Duration applies.
type Rule struct {
	// MaxAttempts is the count of failures that bans; below 1 counts as 1.
	MaxAttempts int
	Duration    time.Duration
	Permanent   bool
	// Shadow is a rule with enforce: false: it decides as usual, but its
	// ban is published as ban.shadowed and bans nothing.
	Shadow bool
}

// CredentialRules are a credential's own Fail2Ban settings
// (credential_overrides in config).
type CredentialRules struct {
	// Codes, when non-empty, replaces the global watched codes for this
	// credential; it is not merged.
	Codes []int
	Rules map[int]Rule
	// Shadow is a whole override with enforce: false: every ban decided
	// for the credential is a shadow ban.
	Shadow bool
}

// BanPolicy is the Fail2Ban, bench and cooldown configuration, as plain
// values.
// config builds it; Decide and the recovery prober read it; projections
// only keep the latest one announced on the log (policy.changed), never
// decide with it.
type BanPolicy struct {
	// Default is the top-level rule, for a code no rule names.
	Default Rule
	// Codes are the status codes Fail2Ban counts (fail2ban.error_codes).
	Codes []int
	// Rules are the global rules per status code (error_code_rules).
	Rules map[int]Rule
	// Credentials are the credentials' own settings, by name.
	Credentials map[string]CredentialRules
	// ProxyCredentials are never banned by outcomes.
	ProxyCredentials map[string]bool
	Bench            BenchPolicy
	// MaxEjectionPercent caps the share of a model's pairs automatic bans
	// may leave banned (fail2ban.max_ejection_percent); 0 or 100 is no
	// cap. See Decide.
	MaxEjectionPercent int
	// Cooldown is the cooldown ladder (the cooldown section).
	Cooldown CooldownPolicy
	// Recovery is fail2ban.recovery: when the prober claims probes of
	// automatic bans.
	Recovery RecoveryPolicy
}

// BenchPolicy: Failures failed outcomes of one model within Window, from at
// least two credentials, bench the model for Duration. Failures 0 turns
// benching off.
type BenchPolicy struct {
	Failures int
	Window   time.Duration
	Duration time.Duration
}

// Watched reports whether status is one of the codes Fail2Ban counts for the
// credential: its override list when it has a non-empty one, else the
// global list.
func (p BanPolicy) Watched(credential string, status int) bool {
	codes := p.Codes
	if o, ok := p.Credentials[credential]; ok && len(o.Codes) > 0 {
		codes = o.Codes
	}
	for _, c := range codes {
		if c == status {
			return true
		}
	}
	return false
}

// RuleFor resolves the rule for a status code on a credential, most
// specific first: the credential's rule for the code, then the global rule
// for the code, then the top-level default.
func (p BanPolicy) RuleFor(credential string, status int) Rule {
	if o, ok := p.Credentials[credential]; ok {
		if r, ok := o.Rules[status]; ok {
			return r
		}
	}
	if r, ok := p.Rules[status]; ok {
		return r
	}
	return p.Default
}
