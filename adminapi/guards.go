package adminapi

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/redact"
)

// guardMetrics count what Fail2Ban's guards did instead of banning: bans
// the ejection cap withheld and bans shadow rules would have imposed. A
// shadow ban is not a ban: auto_ai_router_credential_ban_events_total
// never counts it.
type guardMetrics struct {
	withheld *prometheus.CounterVec
	shadow   *prometheus.CounterVec
	// warned rate-limits the withheld WARN per model label (bounded by
	// the model label cap); only Observe, on the writer goroutine, uses it.
	warned map[string]*withheldWarn
}

// withheldWarnEvery is how often a model's withheld WARN is written, by
// the events' times: the model is at its floor, an operator needs to know,
// and one line per interval says so with the count held back.
const withheldWarnEvery = 10 * time.Second

type withheldWarn struct {
	at         time.Time
	suppressed int
}

func newGuardMetrics(reg prometheus.Registerer) (*guardMetrics, error) {
	m := &guardMetrics{
		withheld: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_bans_withheld_total",
			Help: "Automatic bans not imposed because fail2ban.max_ejection_percent would have been passed (ban.withheld), one per failure streak.",
		}, []string{"model"}),
		shadow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airouter_shadow_bans_total",
			Help: "Bans a rule with enforce: false would have imposed (ban.shadowed); nothing was banned.",
		}, []string{"credential", "model", "error_code"}),
		warned: map[string]*withheldWarn{},
	}
	if err := registerAll(reg, "guard metrics", m.withheld, m.shadow); err != nil {
		return nil, err
	}
	return m, nil
}

// observeGuards counts and logs a live ban.withheld or ban.shadowed.
func (a *API) observeGuards(ev domain.Event) {
	g := a.metrics.guards
	switch {
	case ev.Kind == domain.KindBanWithheld && ev.Withheld != nil:
		w := ev.Withheld
		model := a.labels.label(w.Model)
		g.withheld.WithLabelValues(model).Inc()
		slot := g.warned[model]
		if slot != nil && ev.At.Sub(slot.at) < withheldWarnEvery {
			slot.suppressed++
			return
		}
		held := 0
		if slot != nil {
			held = slot.suppressed
		}
		g.warned[model] = &withheldWarn{at: ev.At}
		a.log.Warn("Ban withheld: the model is at its ejection cap", "credential", w.Credential, "model", w.Model,
			"error_code", w.ErrorCode, "rule", redact.String(w.Rule), "banned", w.Banned, "pairs", w.Pairs,
			"cap_percent", w.Cap, "withheld_since_last_line", held)
	case ev.Kind == domain.KindBanShadowed && ev.Shadowed != nil:
		b := ev.Shadowed
		g.shadow.WithLabelValues(b.Credential, a.labels.label(b.Model), strconv.Itoa(b.ErrorCode)).Inc()
		until := "permanent"
		if b.Until != nil && !b.Permanent {
			until = b.Until.UTC().Format(time.RFC3339)
		}
		a.log.Info("Shadow rule would have banned the credential (enforce: false; nothing banned)",
			"credential", b.Credential, "model", b.Model, "error_code", b.ErrorCode, "failures", b.Failures,
			"rule", redact.String(b.Reason), "would_ban_until", until)
	}
}
