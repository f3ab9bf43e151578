package main

import (
	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/transport/proxy"
)

// proxyDeps turns cfg (the router's, or a reloaded one) into the proxy's
// plain values, with the router's clock. Outcomes go to the log through its non-blocking Publish,
// stamped with the time they were recorded by that clock.
func (rt *router) proxyDeps(cfg *config.Config, settings func() domain.FallbackSettings, metrics proxy.Metrics) proxy.Deps {
	d := proxy.Deps{
		Aliases:        cfg.ModelAlias,
		MasterKey:      cfg.Server.MasterKey,
		ClientKeys:     cfg.Server.APIKeys,
		MaxBodyBytes:   cfg.Server.MaxBodyBytes(),
		RequestTimeout: cfg.Server.RequestTimeout,
		WriteTimeout:   cfg.Server.WriteTimeout,
		Gate:           func() proxy.Gate { return rt.live.Load() },
		Settings:       settings,
		Record:         rt.record,
		Watched:        rt.watched,
		Metrics:        metrics,
		Logger:         rt.logger.Named("proxy"),
		Clock:          rt.clock,
		Panic:          cfg.Fallback.Panic,
		Replica:        rt.replica,
	}
	for _, c := range cfg.Credentials {
		d.Credentials = append(d.Credentials, proxy.Credential{
			Name:       c.Name,
			Type:       c.Type,
			BaseURL:    c.BaseURL,
			APIKey:     c.APIKey,
			RPM:        c.RPM,
			TPM:        c.TPM,
			Weight:     c.Weight,
			IsFallback: c.IsFallback,
		})
	}
	if cfg.FiltersModels() {
		for _, r := range cfg.Routes() {
			for _, t := range r.Targets {
				d.Routes = append(d.Routes, proxy.Route{
					Model:         r.Model,
					Credential:    t.Credential,
					UpstreamModel: t.UpstreamModel,
					Weight:        t.Weight,
					RPM:           t.RPM,
					TPM:           t.TPM,
				})
			}
		}
	}
	return d
}

// record publishes one attempt's outcome; it never blocks (a full queue is
// a counted drop inside the log). A success on a pair the snapshot holds
// back (a recovery probe, a request routed in panic) may lift its ban or
// cooldown, so it goes out promptly; other successes may wait out a quiet
// round (eventlog.Log.HoldQuietRounds).
func (rt *router) record(o domain.Outcome) {
	now := rt.clock.Now().UTC()
	ev := domain.Event{Kind: domain.KindOutcomeRecorded, At: now, Outcome: &o}
	if o.Success() {
		if _, held := rt.live.Load().Blocked(o.Credential, o.Model, now); held {
			rt.log.PublishPrompt(ev)
			return
		}
	}
	rt.log.Publish(ev)
}
