package config

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// The policy of a whole config file is the one Parse and BanPolicy give,
// while the sections outside the policy need not be valid at all.
func TestParsePolicyReadsOnlyThePolicySections(t *testing.T) {
	doc := `
server:
  port: not-a-port
  no_such_key: 1
credentials:
  - name: cred-a
    type: openai
  - name: relay
    type: proxy
    base_url: "::bad::"
events:
  storage: nowhere
fail2ban:
  max_attempts: 2
  ban_duration: 10m
  error_codes: [429, 500]
  error_code_rules:
    - code: 429
      max_attempts: 5
      ban_duration: 1m
  credential_overrides:
    cred-a:
      error_codes: [500]
model_bench:
  failures: 4
  window: 1m
  duration: 2m
`
	p, err := ParsePolicy([]byte(doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Default != (domain.Rule{MaxAttempts: 2, Duration: 10 * time.Minute}) {
		t.Errorf("default rule = %+v", p.Default)
	}
	if r := p.RuleFor("cred-b", 429); r != (domain.Rule{MaxAttempts: 5, Duration: time.Minute}) {
		t.Errorf("rule 429 = %+v", r)
	}
	if p.Watched("cred-a", 429) || !p.Watched("cred-a", 500) || !p.Watched("cred-b", 429) {
		t.Errorf("watched codes wrong: %+v", p)
	}
	if !p.ProxyCredentials["relay"] || p.ProxyCredentials["cred-a"] {
		t.Errorf("proxy credentials = %v", p.ProxyCredentials)
	}
	if p.Bench != (domain.BenchPolicy{Failures: 4, Window: time.Minute, Duration: 2 * time.Minute}) {
		t.Errorf("bench = %+v", p.Bench)
	}
}

// A policy file may be only the policy; its overrides then name any
// credential.
func TestParsePolicyWithoutCredentials(t *testing.T) {
	p, err := ParsePolicy([]byte("fail2ban:\n  max_attempts: 1\n  credential_overrides:\n    cred-x:\n      error_codes: [503]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Watched("cred-x", 503) || p.Watched("cred-x", 500) || p.Default.MaxAttempts != 1 || !p.Default.Permanent {
		t.Errorf("policy = %+v", p)
	}
}

// Mistakes in the policy sections are errors naming the key and value;
// an unknown key there stays rejected.
func TestParsePolicyRejectsBadPolicy(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"fail2ban:\n  max_attempts: 0\n", "fail2ban.max_attempts: 0 must be > 0"},
		{"fail2ban:\n  max_attemps: 3\n", "fail2ban.max_attemps"},
		{"model_bench:\n  window: soon\n", "model_bench.window"},
		{"credentials:\n  - name: cred-a\nfail2ban:\n  credential_overrides:\n    cred-z: {}\n", `fail2ban.credential_overrides.cred-z: "cred-z" is not a configured credential`},
		{"- a list\n", "must be a mapping"},
	} {
		_, err := ParsePolicy([]byte(tc.doc), nil)
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one naming %q", tc.doc, err, tc.want)
		}
	}
}
