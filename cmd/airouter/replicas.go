package main

import (
	"context"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/replicas"
)

// observe is the decision engine's observer: the admin API's metrics and
// log lines, the replicas seen (heartbeats), and the rate windows, which
// count every other replica's requests and tokens from their outcomes as
// they are folded (this replica counted its own at selection), and the
// proxy forgets what it keeps for the pairs the fold dropped. Outcomes
// without a replica were written before outcomes carried one and count
// nowhere but where they were made.
func (rt *router) observe(ev domain.Event, ch projections.Change, live bool) {
	rt.admin.Observe(ev, ch, live)
	rt.tracker.Observe(ev, live)
	for _, d := range ch.Dropped {
		rt.proxy.Forget(d.Key)
	}
	peer := false
	if o := ev.Outcome; o != nil && o.Replica != "" && o.Replica != rt.replica {
		rt.proxy.CountPeer(o.Credential, o.Model, ev.At, o.Tokens)
		peer = true
	}
	if h := ev.Heartbeat; h != nil && h.Replica != rt.replica {
		peer = true
	}
	if peer && live {
		rt.log.HoldQuietRounds(false)
	}
}

// holdQuietRounds lets the log hold rounds of successful outcomes longer
// (eventlog.Log.HoldQuietRounds) while this router runs the embedded log
// and has heard from no other replica (one may share it through
// events.listen). Peers count its requests against the shared rate limits
// from those outcomes, so a router on an external cluster never holds them,
// and observe turns holding off once another replica is heard from; it is
// looked at again with every heartbeat this router sends.
func (rt *router) holdQuietRounds() {
	rt.log.HoldQuietRounds(rt.cfg.Events.Embedded() && rt.tracker.Alone(rt.clock.Now()))
}

// startBeater publishes this replica's heartbeat now and every
// replicas.HeartbeatEvery of the router's clock, with the fingerprint of
// its own policy.
func (rt *router) startBeater(ctx context.Context) {
	rt.beater = replicas.NewBeater(replicas.BeaterConfig{
		Replica:     rt.replica,
		Instance:    rt.instance,
		Fingerprint: rt.ownFingerprint,
		Publish: func(ctx context.Context, ev domain.Event) error {
			_, err := rt.log.PublishControl(ctx, ev)
			rt.holdQuietRounds()
			return err
		},
		Clock:  rt.clock,
		Logger: rt.logger.Named("replicas"),
	})
	rt.beater.Start(ctx)
}

// replicasStatus is what /health's log section shows of the replicas.
func (rt *router) replicasStatus(ls *adminapi.LogStatus) {
	seen, conflict := rt.tracker.View(rt.clock.Now())
	for _, s := range seen {
		ls.Replicas = append(ls.Replicas, adminapi.ReplicaHealth{Replica: s.Replica, LastHeard: s.LastHeard,
			PolicyFingerprint: s.PolicyFingerprint, Self: s.Self})
	}
	if conflict != nil {
		ls.ReplicaConflict = "another live router (instance " + conflict.Instance + ") uses replica id " +
			conflict.Replica + "; give each replica its own events.replica_id"
	}
}
