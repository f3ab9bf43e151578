package adminapi

import (
	"strconv"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/redact"
)

// Observe takes every event the projections apply, in log order, with what
// it changed in the ban table (projections.Change), replayed ones included
// (live false). For live events it counts bans, unbans, cooldowns and
// benches and writes their log lines: an automatic ban at ERROR
// ("Credential banned by fail2ban"), a manual one at WARN ("Credential
// banned by admin"), unbans at INFO. Bans and unbans come from the
// report, so they follow the fold's rules: a ban the fold ignores is not
// counted, and a ban that ends counts one unban, whether an admin lifts it,
// an expiry event or the next outcome on its pair removes it. A ban
// replaced by a newer one on its key counts no unban. The series of pairs
// the fold dropped (ch.Dropped) are deleted (dropped.go). Replayed events
// change nothing here, so a restart does not log history again.
//
// The wiring calls it from projections.Live.AfterApply, before the
// snapshot holding ev is published: an admin request then answers only
// after its event's metrics and log line exist. It must not block.
func (a *API) Observe(ev domain.Event, ch projections.Change, live bool) {
	if !live {
		return
	}
	a.observeBans(ev, ch)
	a.metrics.pairsDropped(ch.Dropped)
	switch ev.Kind {
	case domain.KindCooldownStarted:
		if ev.Cooldown != nil {
			cd := ev.Cooldown
			a.metrics.cooldowns.WithLabelValues(cd.Credential, a.labels.label(cd.Model), strconv.Itoa(cd.Status)).Inc()
			a.log.Debug("Credential cooling down", "credential", cd.Credential,
				"model", cd.Model, "status", cd.Status, "until", cd.Until.UTC().Format(time.RFC3339),
				"reason", cd.Reason)
		}
	case domain.KindModelBenched:
		if ev.Bench != nil {
			b := ev.Bench
			a.metrics.benches.WithLabelValues(a.labels.label(b.Model)).Inc()
			a.log.Warn("Model benched on every credential", "model", b.Model, "failures", b.Failures,
				"credentials", b.Credentials, "until", b.Until.UTC().Format(time.RFC3339),
				"reason", redact.String(b.Reason))
		}
	case domain.KindProbeClaimed:
		a.observeProbe(ev)
	case domain.KindCooldownLifted:
		a.observeCooldownLift(ev)
	case domain.KindBanWithheld, domain.KindBanShadowed:
		a.observeGuards(ev)
	case domain.KindModelUnbenched:
		if ev.Unbench != nil {
			a.metrics.unbenches.WithLabelValues(a.labels.label(ev.Unbench.Model)).Inc()
			a.log.Info("Model unbenched by admin", "model", ev.Unbench.Model)
		}
	case domain.KindFallbackSettingsChanged:
		if ev.Settings != nil {
			s := ev.Settings
			a.log.Info("Fallback settings changed", "max_hops", s.MaxHops,
				"time_budget", time.Duration(s.TimeBudget).String(), "expose_detail_headers", s.ExposeDetailHeaders)
		}
	}
}

// observeBans counts and logs what a live event did to bans: each imposed
// ban, each ban that ended (one line apiece), and for an admin unban one
// line with the models it lifted, even when it lifted none.
func (a *API) observeBans(ev domain.Event, ch projections.Change) {
	var lifted []string
	for _, c := range ch.Bans {
		k := c.Key()
		a.metrics.origins.observe(c)
		switch c.Kind {
		case projections.BanImposed:
			a.observeBan(c.Ban)
		case projections.BanLifted:
			a.metrics.banEnded(k)
			lifted = append(lifted, k.Model)
			if c.By == domain.LiftedByRecovery {
				a.observeRecoveryLift(c)
			}
		case projections.BanExpired:
			a.metrics.banEnded(k)
			a.log.Info("Credential unbanned (ban expired)", "credential", k.Credential, "model", k.Model)
		}
	}
	if u := ev.Unban; ev.Kind == domain.KindBanLifted && u != nil && u.By == domain.LiftedByAdmin {
		a.observeManualUnban(*u, lifted)
	}
}

func (a *API) observeBan(b domain.Ban) {
	model := b.Model
	if model == "" {
		model = domain.AllModels
	}
	a.metrics.bans.WithLabelValues(b.Credential, a.labels.label(model), strconv.Itoa(b.ErrorCode)).Inc()
	permanent := b.Permanent || b.Until == nil
	args := []any{"credential", b.Credential, "model", model, "error_code", b.ErrorCode}
	if b.Origin == domain.OriginAdmin {
		args = append(args, "reason", redact.String(b.Reason))
	} else {
		args = append(args, "failures", b.Failures, "rule", redact.String(b.Reason))
	}
	if permanent {
		args = append(args, "ban_duration", "permanent", "permanent", true)
	} else {
		args = append(args, "ban_duration", b.Until.Sub(b.Since).String(), "permanent", false,
			"until", b.Until.UTC().Format(time.RFC3339))
	}
	if b.Origin == domain.OriginAdmin {
		a.log.Warn("Credential banned by admin", args...)
		return
	}
	a.log.Error("Credential banned by fail2ban", args...)
}

// observeManualUnban logs an admin unban with the models of the bans it
// lifted.
func (a *API) observeManualUnban(u domain.Unban, models []string) {
	args := []any{"credential", u.Credential}
	if u.Model != "" {
		args = append(args, "model", u.Model)
	} else {
		args = append(args, "scope", "every ban of the credential")
	}
	if models == nil {
		models = []string{}
	}
	args = append(args, "removed", len(models), "lifted_models", models)
	a.log.Info("Credential unbanned manually", args...)
}
