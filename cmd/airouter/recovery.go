package main

import (
	"context"

	"github.com/airouter/airouter/decisions"
)

// startProber starts the claiming of recovery probes on the router's clock
// (nothing runs while fail2ban.recovery.probe_after is 0).
func (rt *router) startProber(ctx context.Context) error {
	p, err := decisions.NewProber(decisions.ProberConfig{
		Log:      rt.log,
		Snapshot: rt.live.Load,
		Clock:    rt.clock,
		Policy:   rt.cfg.Fail2Ban.Recovery.Policy(),
		Replica:  rt.replica,
		Logger:   rt.logger.Named("recovery"),
	})
	if err != nil {
		return err
	}
	rt.prober = p
	p.Start(ctx)
	return nil
}
