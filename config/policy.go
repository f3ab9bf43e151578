package config

import "github.com/airouter/airouter/domain"

// BanPolicy returns the Fail2Ban, proxy and bench settings as the plain
// domain value the policy decides with.
func (cfg *Config) BanPolicy() domain.BanPolicy {
	fb := cfg.Fail2Ban
	p := domain.BanPolicy{
		Default:          fb.BanDuration.rule(fb.MaxAttempts),
		Codes:            append([]int(nil), fb.ErrorCodes...),
		Rules:            ruleMap(fb.ErrorCodeRules),
		Credentials:      map[string]domain.CredentialRules{},
		ProxyCredentials: map[string]bool{},
		Bench: domain.BenchPolicy{
			Failures: cfg.ModelBench.Failures,
			Window:   cfg.ModelBench.Window,
			Duration: cfg.ModelBench.Duration,
		},
		MaxEjectionPercent: fb.MaxEjectionPercent,
		Cooldown:           cfg.Cooldown.policy(),
		Recovery:           fb.Recovery.Policy(),
	}
	for name, o := range fb.CredentialOverrides {
		p.Credentials[name] = domain.CredentialRules{
			Codes:  append([]int(nil), o.ErrorCodes...),
			Rules:  ruleMap(o.ErrorCodeRules),
			Shadow: !o.Enforce,
		}
	}
	for _, cr := range cfg.Credentials {
		if cr.Type == domain.CredentialProxy {
			p.ProxyCredentials[cr.Name] = true
		}
	}
	return p
}

func ruleMap(rs []ErrorCodeRule) map[int]domain.Rule {
	m := make(map[int]domain.Rule, len(rs))
	for _, r := range rs {
		rule := r.BanDuration.rule(r.MaxAttempts)
		rule.Shadow = !r.Enforce
		m[r.Code] = rule
	}
	return m
}

func (d BanDuration) rule(maxAttempts int) domain.Rule {
	return domain.Rule{MaxAttempts: maxAttempts, Duration: d.Duration, Permanent: d.Permanent}
}
