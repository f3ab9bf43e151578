package adminapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// recoveryMetrics count what brings a pool back after automatic bans:
// panic-routed requests and recovery probes (fallback.panic,
// fail2ban.recovery).
type recoveryMetrics struct {
	panics *prometheus.CounterVec
	probes *prometheus.CounterVec
}

// The results of airouter_recovery_probes_total.
const (
	probeClaimed   = "claimed"
	probeSucceeded = "succeeded"
	probeFailed    = "failed"
)

func newRecoveryMetrics(reg prometheus.Registerer) (*recoveryMetrics, error) {
	m := &recoveryMetrics{
		panics: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_panic_requests_total",
			Help: "Requests panic-routed (fallback.panic) to candidates held back automatically because none was usable.",
		}, []string{"model"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_recovery_probes_total",
			Help: "Recovery probes of automatic bans: claimed (a claim in the log, counted by every replica), and succeeded or failed (sent by this replica).",
		}, []string{"result"}),
	}
	if err := registerAll(reg, "recovery metrics", m.panics, m.probes); err != nil {
		return nil, err
	}
	for _, r := range []string{probeClaimed, probeSucceeded, probeFailed} {
		m.probes.WithLabelValues(r)
	}
	return m, nil
}

// Panic counts a request panic-routed for model.
func (m *Metrics) Panic(model string) {
	m.recovery.panics.WithLabelValues(m.labels.label(model)).Inc()
}

// Probe counts a recovery probe this process sent, by its result.
func (m *Metrics) Probe(_ string, ok bool) {
	r := probeFailed
	if ok {
		r = probeSucceeded
	}
	m.recovery.probes.WithLabelValues(r).Inc()
}

// observeProbe counts and logs a live probe claim.
func (a *API) observeProbe(ev domain.Event) {
	p := ev.Probe
	if p == nil {
		return
	}
	a.metrics.recovery.probes.WithLabelValues(probeClaimed).Inc()
	a.log.Info("Recovery probe claimed", "credential", p.Credential, "model", p.Model,
		"ban_id", p.BanID, "interval", p.Interval, "replica", p.Replica, "at", ev.At.UTC().Format(time.RFC3339))
}

// observeRecoveryLift logs a ban lifted because a request to its pair
// succeeded (the unban itself is counted with the others).
func (a *API) observeRecoveryLift(c projections.BanChange) {
	k := c.Key()
	a.log.Info("Credential unbanned (recovered: a request to it succeeded)", "credential", k.Credential,
		"model", k.Model, "ban_id", c.ID)
}

// observeCooldownLift logs an auth cooldown a recovery probe ended.
func (a *API) observeCooldownLift(ev domain.Event) {
	l := ev.CooldownLift
	if l == nil {
		return
	}
	a.log.Info("Credential cooldown lifted (recovered: a probe request with it succeeded)",
		"credential", l.Credential, "cooldown_id", l.CooldownID)
}
