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

// buildSurfaces builds the admin API over the projections and the log,
// then the proxy, which reads the API's failover settings and reports
// through its metrics, then hands the proxy's counters (usage, rejections,
// learned models) and the log read back (the views of the past) to the API. Both run on the router's clock. It runs
// before the log is followed.
func (rt *router) buildSurfaces() error {
	ad := adminDeps(rt.cfg, rt.logger)
	ad.Clock = rt.clock.Now
	ad.Snapshot = rt.live.Load
	ad.WaitFor = rt.live.WaitFor
	ad.Publish = rt.log.PublishControl
	ad.LogStatus = rt.logStatus
	ad.Watched = rt.watched
	// The file's policy as of the latest reload, not only at start.
	ad.FilePolicy = rt.ownFingerprint
	admin, err := adminapi.New(ad)
	if err != nil {
		return err
	}
	if err := rt.startTracing(context.Background(), admin.Registry()); err != nil {
		return err
	}
	pd := rt.proxyDeps(rt.cfg, admin.Settings, admin.Metrics())
	if rt.tracer != nil {
		pd.Tracer = rt.tracer
	}
	p, err := proxy.New(pd)
	if err != nil {
		rt.stopTracing()
		return err
	}
	admin.SetTraffic(p)
	rt.admin = admin
	if rt.reload, err = rt.newReloader(); err != nil {
		rt.stopTracing()
		return err
	}
	admin.SetHistory(newLogHistory(rt.log), adminapi.PastLimits{})
	rt.admin, rt.proxy = admin, p
	return nil
}

// adminDeps is the part of the admin API's dependencies that config
// determines: credentials, configured pairs, watched codes, default
// settings. The router adds the live snapshot, the log and the proxy's
// counters; replay adds a replayed snapshot and a fixed clock, so both
// judge /health alike.
func adminDeps(cfg *config.Config, logger hclog.Logger) adminapi.Deps {
	ad := adminapi.Deps{
		MasterKey:       cfg.Server.MasterKey,
		Watched:         cfg.BanPolicy().Watched,
		DefaultSettings: cfg.Fallback.Settings(),
		Logger:          logger,
		// An operator's change is a request: it waits for its event to be
		// applied no longer than server.request_timeout.
		ChangeTimeout:   cfg.Server.RequestTimeout,
		ConfiguredPairs: configuredPairs(cfg),
	}
	// The file's policy, which /health compares with the policy in force,
	// in the router and in replay's views alike.
	fp := domain.PolicyFingerprint(cfg.BanPolicy())
	ad.FilePolicy = func() string { return fp }
	for _, c := range cfg.Credentials {
		ad.Credentials = append(ad.Credentials, adminapi.Credential{
			Name: c.Name, Type: c.Type, IsFallback: c.IsFallback,
			Weight: c.Weight, RPM: c.RPM, TPM: c.TPM,
		})
	}
	return ad
}

// configuredPairs lists every configured target once. The admin API adds
// the models proxy credentials learned; replay has no proxy, so it shows a
// learned model only once an event names it.
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
		Connected:      st.Writable,
		Pending:        st.Pending,
		Published:      st.Published,
		Dropped:        st.Dropped,
		Failed:         st.Failed,
		LastError:      st.LastError,
		StoreFault:     st.StoreFault,
		MissingEvents:  rt.damage.Missing,
		MissingFromSeq: rt.damage.FromSeq,
		ServerProcess:  st.ServerProcess,
		ServerPID:      st.ServerPID,
		ServerRestarts: st.ServerRestarts,
	}
	rt.replicasStatus(&ls)
	ctx, cancel := context.WithTimeout(context.Background(), defaultStatusTimeout)
	defer cancel()
	if last, err := rt.log.LastSeq(ctx); err == nil {
		ls.LastSeq = last
	}
	return ls
}
