package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"

	"github.com/airouter/airouter/decisions"
)

// newReplicaID names this process in recovery probe claims: host, process
// id and a random part, so a restarted process never takes an earlier
// process's claims for its own.
func newReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "airouter"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + hex.EncodeToString(b[:])
}

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
