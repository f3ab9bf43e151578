package config

import (
	"slices"
	"sort"
	"time"

	"github.com/airouter/airouter/domain"
)

// DefaultMaxAttempts is fail2ban.max_attempts when omitted.
const DefaultMaxAttempts = 3

// DefaultErrorCodes is fail2ban.error_codes when omitted or empty.
func DefaultErrorCodes() []int { return []int{401, 403, 429, 500, 502, 503, 504} }

// BanDuration is how long a Fail2Ban ban lasts: Permanent, or Duration.
type BanDuration struct {
	Permanent bool
	Duration  time.Duration
}

// String renders "permanent" or a Go duration.
func (d BanDuration) String() string {
	if d.Permanent {
		return "permanent"
	}
	return d.Duration.String()
}

// MarshalYAML writes the duration as it is written in the file.
func (d BanDuration) MarshalYAML() (any, error) { return d.String(), nil }

// ErrorCodeRule is how many failures with Code ban a pair, and for how
// long. Its fields are resolved: what the file left out is inherited.
type ErrorCodeRule struct {
	Code        int         `yaml:"code"`
	MaxAttempts int         `yaml:"max_attempts"`
	BanDuration BanDuration `yaml:"ban_duration"`
	// Enforce false makes the rule a shadow rule: it publishes the ban it
	// decides as ban.shadowed and bans nothing. Inherited like the rest.
	Enforce bool `yaml:"enforce"`
}

// CredentialOverride is one credential's own Fail2Ban settings.
type CredentialOverride struct {
	// ErrorCodes, when non-empty, replaces the global list for the
	// credential; it is not merged with it.
	ErrorCodes     []int           `yaml:"error_codes,flow,omitempty"`
	ErrorCodeRules []ErrorCodeRule `yaml:"error_code_rules,omitempty"`
	// Enforce false makes every ban of the credential a shadow ban.
	Enforce bool `yaml:"enforce"`
}

// Fail2Ban bans a credential+model pair after repeated failures with a
// watched status code. A rule is chosen per code, most specific first: the
// credential's rule for the code, then the global rule for the code, then
// MaxAttempts/BanDuration.
type Fail2Ban struct {
	MaxAttempts int         `yaml:"max_attempts"`
	BanDuration BanDuration `yaml:"ban_duration"`
	// ErrorCodes are the watched status codes, the only ones counted.
	ErrorCodes     []int           `yaml:"error_codes,flow"`
	ErrorCodeRules []ErrorCodeRule `yaml:"error_code_rules,omitempty"`
	// CredentialOverrides are credentials' own settings, by credential
	// name.
	CredentialOverrides map[string]CredentialOverride `yaml:"credential_overrides,omitempty"`
	// Recovery is when automatic bans are probed (recovery.go).
	Recovery Recovery `yaml:"recovery"`
	// MaxEjectionPercent caps the share of a model's pairs automatic bans
	// may leave banned; 100 is no cap (guards.go).
	MaxEjectionPercent int `yaml:"max_ejection_percent"`
}

func buildFail2Ban(c *checker, f fileFail2Ban, creds []Credential) Fail2Ban {
	const p = "fail2ban"
	var fb Fail2Ban
	var ok bool
	if fb.MaxAttempts, ok = c.integer(p+".max_attempts", f.MaxAttempts, DefaultMaxAttempts); ok && fb.MaxAttempts < 1 {
		c.add(p+".max_attempts", "%d must be > 0", fb.MaxAttempts)
		fb.MaxAttempts = DefaultMaxAttempts
	}
	fb.BanDuration, _ = c.banDuration(p+".ban_duration", f.BanDuration, BanDuration{Permanent: true})
	fb.ErrorCodes = codes(c, p+".error_codes", f.ErrorCodes)
	if len(fb.ErrorCodes) == 0 {
		fb.ErrorCodes = DefaultErrorCodes()
	}
	fb.MaxEjectionPercent = ejectionPercent(c, p+".max_ejection_percent", f.MaxEjectionPercent)
	top := ErrorCodeRule{MaxAttempts: fb.MaxAttempts, BanDuration: fb.BanDuration, Enforce: true}
	fb.ErrorCodeRules = rules(c, p+".error_code_rules", f.ErrorCodeRules, fb.ErrorCodes,
		func(int) ErrorCodeRule { return top })
	fb.Recovery = buildRecovery(c, f.Recovery)

	types := map[string]domain.CredentialType{}
	for _, cr := range creds {
		types[cr.Name] = cr.Type
	}
	names := make([]string, 0, len(f.CredentialOverrides))
	for name := range f.CredentialOverrides {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		op := keyPath(p+".credential_overrides", name)
		t, known := types[name]
		switch {
		case !known:
			c.add(op, "%q is not a configured credential", name)
		case t == domain.CredentialProxy:
			c.warn(op, "has no effect: proxy credentials are never banned by outcomes")
		}
		fo := f.CredentialOverrides[name]
		o := CredentialOverride{Enforce: c.boolean(op+".enforce", fo.Enforce, true)}
		o.ErrorCodes = codes(c, op+".error_codes", fo.ErrorCodes)
		watched := o.ErrorCodes
		if len(watched) == 0 {
			watched = fb.ErrorCodes
		}
		// A credential rule inherits what it leaves out from the global
		// rule for its code, else from the top level.
		o.ErrorCodeRules = rules(c, op+".error_code_rules", fo.ErrorCodeRules, watched,
			func(code int) ErrorCodeRule { return fb.rule(code) })
		if fb.CredentialOverrides == nil {
			fb.CredentialOverrides = map[string]CredentialOverride{}
		}
		fb.CredentialOverrides[name] = o
	}
	return fb
}

// rule returns the global rule for a code, or the top level.
func (fb Fail2Ban) rule(code int) ErrorCodeRule {
	for _, r := range fb.ErrorCodeRules {
		if r.Code == code {
			return r
		}
	}
	return ErrorCodeRule{Code: code, MaxAttempts: fb.MaxAttempts, BanDuration: fb.BanDuration, Enforce: true}
}

// codes parses a list of HTTP status codes; a repeated code is dropped.
func codes(c *checker, path string, fs []string) []int {
	var out []int
	for i, s := range fs {
		p := indexPath(path, i)
		if code, ok := statusCode(c, p, s); ok && !slices.Contains(out, code) {
			out = append(out, code)
		}
	}
	return out
}

func statusCode(c *checker, path, s string) (int, bool) {
	if !c.required(path, s) {
		return 0, false
	}
	code, ok := c.integer(path, s, 0)
	if ok && (code < 100 || code > 599) {
		c.add(path, "%d is not an HTTP status (100..599)", code)
		return 0, false
	}
	return code, ok
}

// rules parses error_code_rules. A rule's max_attempts, when given, must
// be > 0; what a rule leaves out comes from parent(code). A code ruled
// twice is a problem; a rule for a code that is not watched is kept with a
// warning, since it has no effect.
func rules(c *checker, path string, fs []fileRule, watched []int, parent func(int) ErrorCodeRule) []ErrorCodeRule {
	var out []ErrorCodeRule
	first := map[int]string{}
	for i, f := range fs {
		p := indexPath(path, i)
		code, ok := statusCode(c, p+".code", f.Code)
		if !ok {
			continue
		}
		if prev, dup := first[code]; dup {
			c.add(p+".code", "%d duplicates %s", code, prev)
			continue
		}
		first[code] = p + ".code"
		r := parent(code)
		r.Code = code
		if n, ok := c.integer(p+".max_attempts", f.MaxAttempts, r.MaxAttempts); ok && n < 1 {
			c.add(p+".max_attempts", "%d must be > 0 (omit it to inherit %d)", n, r.MaxAttempts)
		} else {
			r.MaxAttempts = n
		}
		r.BanDuration, _ = c.banDuration(p+".ban_duration", f.BanDuration, r.BanDuration)
		r.Enforce = c.boolean(p+".enforce", f.Enforce, r.Enforce)
		if !slices.Contains(watched, code) {
			c.warn(p+".code", "%d is not a watched error code; the rule has no effect", code)
		}
		out = append(out, r)
	}
	return out
}
