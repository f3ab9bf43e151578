package adminapi

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airouter/airouter/domain"
)

// Observe takes every event the projections apply, in log order, replayed
// ones included (live false). For live events it counts bans, unbans,
// cooldowns and benches and writes their log lines: an automatic ban at
// ERROR ("Credential banned by fail2ban"), a manual one at WARN
// ("Credential banned by admin"), unbans at INFO. A ban that ends counts
// one unban, whether an expiry event or the next outcome on its pair
// lifts it, as the fold does. Replayed events only keep the record of bans
// that unbans are counted against, so a restart does not log history
// again.
//
// The wiring calls it from projections.Live.AfterApply, before the
// snapshot holding ev is published: an admin request then answers only
// after its event's metrics and log line exist. It must not block.
func (a *API) Observe(ev domain.Event, live bool) {
	switch ev.Kind {
	case domain.KindBanImposed:
		if ev.Ban == nil {
			return
		}
		a.tracker.imposed(ev)
		if live {
			a.observeBan(*ev.Ban)
		}
	case domain.KindBanLifted:
		if ev.Unban == nil {
			return
		}
		lifted := a.tracker.lifted(ev)
		if live {
			a.observeUnban(*ev.Unban, lifted)
		}
	case domain.KindOutcomeRecorded:
		if ev.Outcome == nil {
			return
		}
		if ended := a.tracker.outcome(ev); live && len(ended) > 0 {
			a.observeUnban(domain.Unban{Credential: ev.Outcome.Credential, By: domain.LiftedByExpiry}, ended)
		}
	case domain.KindCooldownStarted:
		if live && ev.Cooldown != nil {
			cd := ev.Cooldown
			a.metrics.cooldowns.WithLabelValues(cd.Credential, cd.Model, strconv.Itoa(cd.Status)).Inc()
			a.log.Debug("Credential cooling down (upstream Retry-After)", "credential", cd.Credential,
				"model", cd.Model, "status", cd.Status, "until", cd.Until.UTC().Format(time.RFC3339))
		}
	case domain.KindModelBenched:
		if live && ev.Bench != nil {
			b := ev.Bench
			a.metrics.benches.WithLabelValues(b.Model).Inc()
			a.log.Warn("Model benched on every credential", "model", b.Model, "failures", b.Failures,
				"credentials", b.Credentials, "until", b.Until.UTC().Format(time.RFC3339),
				"reason", domain.Redact(b.Reason))
		}
	case domain.KindFallbackSettingsChanged:
		if live && ev.Settings != nil {
			s := ev.Settings
			a.log.Info("Fallback settings changed", "max_hops", s.MaxHops,
				"time_budget", time.Duration(s.TimeBudget).String(), "expose_detail_headers", s.ExposeDetailHeaders)
		}
	}
}

func (a *API) observeBan(b domain.Ban) {
	model := b.Model
	if model == "" {
		model = domain.AllModels
	}
	a.metrics.bans.WithLabelValues(b.Credential, model, strconv.Itoa(b.ErrorCode)).Inc()
	permanent := b.Permanent || b.Until == nil
	args := []any{"credential", b.Credential, "model", model, "error_code", b.ErrorCode}
	if b.Origin == domain.OriginAdmin {
		args = append(args, "reason", domain.Redact(b.Reason))
	} else {
		args = append(args, "failures", b.Failures, "rule", domain.Redact(b.Reason))
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

func (a *API) observeUnban(u domain.Unban, lifted []domain.Key) {
	for _, k := range lifted {
		a.metrics.unbans.WithLabelValues(k.Credential, k.Model).Inc()
	}
	if u.By == domain.LiftedByExpiry {
		for _, k := range lifted {
			a.log.Info("Credential unbanned (ban expired)", "credential", k.Credential, "model", k.Model)
		}
		return
	}
	args := []any{"credential", u.Credential}
	if u.Model != "" {
		args = append(args, "model", u.Model)
	} else {
		args = append(args, "scope", "every ban of the credential")
	}
	models := make([]string, len(lifted))
	for i, k := range lifted {
		models[i] = k.Model
	}
	args = append(args, "removed", len(lifted), "lifted_models", models)
	a.log.Info("Credential unbanned manually", args...)
}

// banTracker remembers the bans the log has imposed and not yet lifted, by
// key, so that an unban can be counted once per ban it lifts. It follows
// the lifting rules of projections.Apply; only Observe's goroutine writes
// it, the mutex keeps a stray caller safe.
type banTracker struct {
	mu   sync.Mutex
	bans map[domain.Key]trackedBan
}

type trackedBan struct {
	id    string
	perm  bool
	until time.Time
}

func (t *banTracker) imposed(ev domain.Event) {
	b := ev.Ban
	if b.Credential == "" {
		return
	}
	k := b.Key()
	if k.Model == "" {
		k.Model = domain.AllModels
	}
	id := ev.ID
	if id == "" && ev.Seq > 0 {
		id = "seq/" + ev.Pos().String() // as projections names it
	}
	tb := trackedBan{id: id, perm: b.Permanent || b.Until == nil}
	if !tb.perm {
		tb.until = *b.Until
	}
	t.mu.Lock()
	t.bans[k] = tb
	t.mu.Unlock()
}

// lifted forgets the bans the unban lifts and returns the keys of those
// it counts: for an admin the ones still active at the event's time, for an
// expiry the ban it names.
func (t *banTracker) lifted(ev domain.Event) []domain.Key {
	u := ev.Unban
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []domain.Key
	lift := func(k domain.Key) {
		b, ok := t.bans[k]
		if !ok {
			return
		}
		switch u.By {
		case domain.LiftedByAdmin:
			if b.perm || ev.At.Before(b.until) {
				out = append(out, k)
			}
		case domain.LiftedByExpiry:
			if u.BanID == "" || b.id != u.BanID {
				return
			}
			out = append(out, k)
		default:
			return
		}
		delete(t.bans, k)
	}
	switch u.Model {
	case "":
		var keys []domain.Key
		for k := range t.bans {
			if k.Credential == u.Credential {
				keys = append(keys, k)
			}
		}
		slices.SortFunc(keys, func(x, y domain.Key) int { return strings.Compare(x.Model, y.Model) })
		for _, k := range keys {
			lift(k)
		}
	default:
		lift(domain.Key{Credential: u.Credential, Model: u.Model})
	}
	return out
}

// outcome forgets the bans that ended before an outcome on their pair (the
// pair's own ban and its credential's wildcard), which the fold lifts when
// it folds the outcome, and returns their keys.
func (t *banTracker) outcome(ev domain.Event) []domain.Key {
	o := ev.Outcome
	if o.Credential == "" || o.Model == "" || o.Model == domain.AllModels {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []domain.Key
	for _, k := range [2]domain.Key{{Credential: o.Credential, Model: domain.AllModels}, o.Key()} {
		if b, ok := t.bans[k]; ok && !b.perm && !ev.At.Before(b.until) {
			delete(t.bans, k)
			out = append(out, k)
		}
	}
	return out
}
