package adminapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// originMetrics count bans by who imposed them and unbans by what ended
// them, across credentials and models: the dashboard's "by origin" panels
// (the auto_ai_router_* ban counters keep auto_ai_router's labels).
type originMetrics struct {
	bans   *prometheus.CounterVec
	unbans *prometheus.CounterVec
}

func newOriginMetrics(reg prometheus.Registerer) (*originMetrics, error) {
	o := &originMetrics{
		bans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_ban_events_total",
			Help: "Bans imposed, by origin (admin, fail2ban).",
		}, []string{"origin"}),
		unbans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_unban_events_total",
			Help: "Bans ended, by what ended them: admin (an unban), recovery (a probe answered), expiry (the ban's time was up).",
		}, []string{"by"}),
	}
	if err := registerAll(reg, "ban origin metrics", o.bans, o.unbans); err != nil {
		return nil, err
	}
	return o, nil
}

// observe counts one ban change of a live event.
func (o *originMetrics) observe(c projections.BanChange) {
	switch c.Kind {
	case projections.BanImposed:
		o.bans.WithLabelValues(string(c.Ban.Origin)).Inc()
	case projections.BanLifted:
		o.unbans.WithLabelValues(string(c.By)).Inc()
	case projections.BanExpired:
		o.unbans.WithLabelValues(string(domain.LiftedByExpiry)).Inc()
	}
}
