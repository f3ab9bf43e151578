package config

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// DefaultProbeMax is fail2ban.recovery.probe_max when omitted.
const DefaultProbeMax = 30 * time.Minute

// Recovery is fail2ban.recovery: an automatic ban (permanent or not) lets
// one live request through to its pair ProbeAfter after it began, then
// after twice that, and so on up to ProbeMax between probes; a probe that
// succeeds lifts the ban. ProbeAfter 0 turns probes off. Manual bans and
// cooldowns backed by Retry-After are never probed.
type Recovery struct {
	ProbeAfter time.Duration `yaml:"probe_after"`
	ProbeMax   time.Duration `yaml:"probe_max"`
}

type fileRecovery struct {
	ProbeAfter string `yaml:"probe_after"`
	ProbeMax   string `yaml:"probe_max"`
}

func buildRecovery(c *checker, f fileRecovery) Recovery {
	const p = "fail2ban.recovery."
	r := Recovery{
		ProbeAfter: c.duration(p+"probe_after", f.ProbeAfter, 0),
		ProbeMax:   c.duration(p+"probe_max", f.ProbeMax, DefaultProbeMax),
	}
	c.ladder(p, "probe_after", "probe_max", r.ProbeAfter, r.ProbeMax, "the wait between probes", DefaultProbeMax)
	return r
}

// Policy returns the recovery settings as the domain value.
func (r Recovery) Policy() domain.RecoveryPolicy {
	return domain.RecoveryPolicy{ProbeAfter: r.ProbeAfter, ProbeMax: r.ProbeMax}
}
