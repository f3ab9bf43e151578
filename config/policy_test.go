package config_test

import (
	"slices"
	"testing"
	"time"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
)

// TestBanPolicyPrecedence checks the rule and watched-code precedence of
// full.good.yaml: the credential's rule for the code, then the global
// rule, then the top level; an override's error_codes replace the global
// list.
func TestBanPolicyPrecedence(t *testing.T) {
	cfg, err := config.Parse(read(t, fixtures+"/full.good.yaml"), testEnv)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.BanPolicy()
	hour := domain.Rule{MaxAttempts: 4, Duration: time.Hour}
	rules := []struct {
		credential string
		code       int
		want       domain.Rule
	}{
		{"claude", 503, hour}, // top level
		{"claude", 429, domain.Rule{MaxAttempts: 5, Duration: 5 * time.Minute}},                  // global rule
		{"claude", 401, domain.Rule{MaxAttempts: 1, Duration: time.Hour}},                        // global rule, duration inherited
		{"claude", 500, domain.Rule{MaxAttempts: 4, Permanent: true}},                            // global rule, attempts inherited
		{"reseller", 400, domain.Rule{MaxAttempts: 3, Duration: 15 * time.Minute, Shadow: true}}, // credential rule, enforce: false
		{"reseller", 429, domain.Rule{MaxAttempts: 10, Duration: 5 * time.Minute}},               // credential rule, duration from the global rule
		{"reseller", 500, domain.Rule{MaxAttempts: 4, Permanent: true}},                          // no credential rule: global
		{"openai-1", 500, domain.Rule{MaxAttempts: 2, Permanent: true}},                          // credential rule over global
		{"openai-1", 429, domain.Rule{MaxAttempts: 5, Duration: 5 * time.Minute}},                // global
		{"unknown", 502, hour},
	}
	for _, r := range rules {
		if got := p.RuleFor(r.credential, r.code); got != r.want {
			t.Errorf("RuleFor(%s, %d) = %+v, want %+v", r.credential, r.code, got, r.want)
		}
	}
	watched := []struct {
		credential string
		code       int
		want       bool
	}{
		{"claude", 401, true}, {"claude", 403, false}, {"claude", 400, false},
		{"reseller", 400, true}, {"reseller", 401, false}, {"reseller", 429, true},
		{"openai-1", 401, true}, {"openai-1", 400, false}, // an override without error_codes keeps the global list
	}
	for _, w := range watched {
		if got := p.Watched(w.credential, w.code); got != w.want {
			t.Errorf("Watched(%s, %d) = %v, want %v", w.credential, w.code, got, w.want)
		}
	}
	if !p.ProxyCredentials["relay"] || len(p.ProxyCredentials) != 1 {
		t.Errorf("ProxyCredentials = %v, want only relay", p.ProxyCredentials)
	}
	if want := (domain.BenchPolicy{Failures: 0, Window: 5 * time.Minute, Duration: time.Minute}); p.Bench != want {
		t.Errorf("Bench = %+v, want %+v", p.Bench, want)
	}
	if want := (domain.FallbackSettings{MaxHops: 1, TimeBudget: 0, ExposeDetailHeaders: true}); cfg.Fallback.Settings() != want {
		t.Errorf("Fallback.Settings() = %+v, want %+v", cfg.Fallback.Settings(), want)
	}
	// The guards: the cap, shadow rules (a rule's enforce: false, and a
	// whole override's), the cooldown ladder.
	if p.MaxEjectionPercent != 50 {
		t.Errorf("MaxEjectionPercent = %d, want 50", p.MaxEjectionPercent)
	}
	shadow := []struct {
		credential string
		code       int
		want       bool
	}{{"reseller", 400, true}, {"reseller", 429, false}, {"openai-1", 500, true}, {"openai-1", 429, true}, {"claude", 429, false}}
	for _, s := range shadow {
		if got := p.Shadowed(s.credential, s.code); got != s.want {
			t.Errorf("Shadowed(%s, %d) = %v, want %v", s.credential, s.code, got, s.want)
		}
	}
	if want := (domain.CooldownPolicy{RateLimitBase: time.Second, RateLimitMax: time.Minute, Auth: 5 * time.Minute}); p.Cooldown != want {
		t.Errorf("Cooldown = %+v, want %+v", p.Cooldown, want)
	}
}

// TestBanPolicyDefaults checks the policy of a config that sets nothing.
func TestBanPolicyDefaults(t *testing.T) {
	cfg, err := config.Parse(read(t, fixtures+"/minimal.good.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.BanPolicy()
	if want := (domain.Rule{MaxAttempts: 3, Permanent: true}); p.Default != want || p.RuleFor("local", 429) != want {
		t.Errorf("Default = %+v, want %+v", p.Default, want)
	}
	if !slices.Equal(p.Codes, config.DefaultErrorCodes()) {
		t.Errorf("Codes = %v, want %v", p.Codes, config.DefaultErrorCodes())
	}
	for _, code := range []int{401, 403, 429, 500, 502, 503, 504} {
		if !p.Watched("local", code) {
			t.Errorf("%d is not watched", code)
		}
	}
	if p.Watched("local", 400) || p.Watched("local", 200) {
		t.Error("400 or 200 is watched")
	}
	if want := (domain.BenchPolicy{Failures: 3, Window: 15 * time.Minute, Duration: 10 * time.Minute}); p.Bench != want {
		t.Errorf("Bench = %+v, want %+v", p.Bench, want)
	}
	// No guard is on by default: no cap, no shadow rule, only Retry-After
	// cools.
	if p.Capped() || p.Shadowed("local", 500) || p.Cooldown != (domain.CooldownPolicy{RateLimitMax: 10 * time.Minute}) {
		t.Errorf("MaxEjectionPercent %d, Cooldown %+v: want no guard", p.MaxEjectionPercent, p.Cooldown)
	}
	// The policy is a copy: changing it leaves the config alone.
	p.Codes[0] = 999
	if cfg.BanPolicy().Codes[0] == 999 {
		t.Error("BanPolicy shares its codes with the config")
	}
}
