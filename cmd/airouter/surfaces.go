package main

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/transport/proxy"
)

// buildSurfaces builds the admin API and the proxy over the projections
// and the log, before the log is followed.
func (rt *router) buildSurfaces() error {
	ad := adminDeps(rt.cfg, rt.logger)
	ad.Snapshot = rt.live.Load
	ad.WaitFor = rt.live.WaitFor
	ad.Publish = rt.log.PublishControl
	ad.LogStatus = rt.logStatus
	var p *proxy.Proxy
	ad.Usage = func(credential, model string) (int, int) { return p.Usage(credential, model) }
	ad.Rejections = func() map[string]uint64 { return p.Rejections() }
	ad.Pairs = func() []adminapi.Pair { return rt.pairs(p) }
	admin, err := adminapi.New(ad)
	if err != nil {
		return err
	}
	rt.admin = admin
	p, err = proxy.New(rt.proxyDeps(admin.Settings, admin.Metrics()))
	if err != nil {
		return err
	}
	rt.proxy = p
	rt.engine.observe = admin.Observe
	return nil
}

// adminDeps is the part of the admin API's dependencies that config
// determines: credentials, configured pairs, watched codes, default
// settings. The router adds the live snapshot, the log and usage; replay
// adds a replayed snapshot and a fixed clock, so both judge /health alike.
func adminDeps(cfg *config.Config, logger hclog.Logger) adminapi.Deps {
	ad := adminapi.Deps{
		MasterKey:       cfg.Server.MasterKey,
		Watched:         cfg.BanPolicy().Watched,
		DefaultSettings: cfg.Fallback.Settings(),
		Logger:          logger,
		WriteTimeout:    cfg.Server.RequestTimeout,
		Pairs:           func() []adminapi.Pair { return configuredPairs(cfg) },
	}
	for _, c := range cfg.Credentials {
		ad.Credentials = append(ad.Credentials, adminapi.Credential{
			Name: c.Name, Type: string(c.Type), IsFallback: c.IsFallback,
			Weight: c.Weight, RPM: c.RPM, TPM: c.TPM,
		})
	}
	return ad
}

// pairs lists the pairs /health shows: every configured target, and the
// models proxy credentials learned.
func (rt *router) pairs(p *proxy.Proxy) []adminapi.Pair {
	out := configuredPairs(rt.cfg)
	seen := make(map[domain.Key]bool, len(out))
	for _, pr := range out {
		seen[domain.Key{Credential: pr.Credential, Model: pr.Model}] = true
	}
	learned := p.Learned()
	for _, c := range rt.cfg.Credentials {
		for _, m := range learned[c.Name] {
			k := domain.Key{Credential: c.Name, Model: m}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, adminapi.Pair{Credential: c.Name, Model: m, Weight: c.Weight, RPM: -1, TPM: -1})
		}
	}
	return out
}

// configuredPairs lists every configured target once. Replay shows these
// too; the models proxy credentials learn at runtime are not in the log,
// so replay shows them only once an event names them.
func configuredPairs(cfg *config.Config) []adminapi.Pair {
	var out []adminapi.Pair
	seen := map[domain.Key]bool{}
	for _, r := range cfg.Routes() {
		for _, t := range r.Targets {
			k := domain.Key{Credential: t.Credential, Model: r.Model}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, adminapi.Pair{Credential: t.Credential, Model: r.Model,
				Weight: t.Weight, RPM: t.RPM, TPM: t.TPM})
		}
	}
	return out
}

// defaultStatusTimeout bounds the log position query of /health, so a
// log that is down makes /health say so instead of hanging.
const defaultStatusTimeout = time.Second

func (rt *router) logStatus() adminapi.LogStatus {
	st := rt.log.Stats()
	ls := adminapi.LogStatus{
		Connected: st.Writable,
		Pending:   st.Pending,
		Published: st.Published,
		Dropped:   st.Dropped,
		Failed:    st.Failed,
		LastError: st.LastError,
	}
	ctx, cancel := context.WithTimeout(context.Background(), defaultStatusTimeout)
	defer cancel()
	if last, err := rt.log.LastSeq(ctx); err == nil {
		ls.LastSeq = last
	}
	return ls
}
