package config

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// The guards on Fail2Ban and the cooldown ladder: fail2ban.max_ejection_percent
// (the ejection cap), enforce on rules and overrides (shadow rules, read in
// fail2ban.go) and the cooldown section.

// DefaultMaxEjectionPercent is fail2ban.max_ejection_percent when omitted:
// no cap.
const DefaultMaxEjectionPercent = 100

// DefaultRateLimitMax is cooldown.rate_limit_max when omitted.
const DefaultRateLimitMax = 10 * time.Minute

// ejectionPercent parses fail2ban.max_ejection_percent: 1..100.
func ejectionPercent(c *checker, path, s string) int {
	n, ok := c.integer(path, s, DefaultMaxEjectionPercent)
	if ok && (n < 1 || n > 100) {
		c.add(path, "%d is not a percentage of 1..100 (100 is no cap)", n)
		return DefaultMaxEjectionPercent
	}
	return n
}

// Cooldown is the cooldown section: how long a pair (or a credential)
// rests after a 429 without Retry-After or a 401, besides any Retry-After.
// Zero durations turn each part off.
type Cooldown struct {
	// RateLimitBase cools a pair for its first 429 since its last success,
	// doubling with each further one up to RateLimitMax; a longer
	// Retry-After wins.
	RateLimitBase time.Duration `yaml:"rate_limit_base"`
	RateLimitMax  time.Duration `yaml:"rate_limit_max"`
	// Auth cools every model of a credential for a 401.
	Auth time.Duration `yaml:"auth"`
}

type fileCooldown struct {
	RateLimitBase string `yaml:"rate_limit_base"`
	RateLimitMax  string `yaml:"rate_limit_max"`
	Auth          string `yaml:"auth"`
}

func buildCooldown(c *checker, f fileCooldown) Cooldown {
	const p = "cooldown."
	cd := Cooldown{
		RateLimitBase: c.duration(p+"rate_limit_base", f.RateLimitBase, 0),
		RateLimitMax:  c.duration(p+"rate_limit_max", f.RateLimitMax, DefaultRateLimitMax),
		Auth:          c.duration(p+"auth", f.Auth, 0),
	}
	c.ladder(p, "rate_limit_base", "rate_limit_max", cd.RateLimitBase, cd.RateLimitMax, "the rate-limit ladder", DefaultRateLimitMax)
	if cd.RateLimitMax > domain.MaxRetryAfter {
		c.add(p+"rate_limit_max", "%s is above the longest cooldown, %s", cd.RateLimitMax, domain.MaxRetryAfter)
	}
	if cd.Auth > domain.MaxRetryAfter {
		c.add(p+"auth", "%s is above the longest cooldown, %s", cd.Auth, domain.MaxRetryAfter)
	}
	return cd
}

// policy is the section as the domain value.
func (cd Cooldown) policy() domain.CooldownPolicy {
	return domain.CooldownPolicy{RateLimitBase: cd.RateLimitBase, RateLimitMax: cd.RateLimitMax, Auth: cd.Auth}
}
