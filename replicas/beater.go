package replicas

import (
	"context"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// BeaterConfig is what a Beater needs.
type BeaterConfig struct {
	Replica, Instance string
	// Fingerprint returns the fingerprint of the policy in the router's
	// file, read at each heartbeat (it changes on reload); nil is none.
	Fingerprint func() string
	// Publish stores one event in the log.
	Publish func(context.Context, domain.Event) error
	Clock   clockwork.Clock
	Logger  hclog.Logger
}

// Beater publishes this router's heartbeat at start and every
// HeartbeatEvery of its clock.
type Beater struct {
	cfg  BeaterConfig
	wg   sync.WaitGroup
	stop context.CancelFunc
}

// NewBeater returns a Beater; Start runs it.
func NewBeater(cfg BeaterConfig) *Beater {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	return &Beater{cfg: cfg}
}

// Start publishes the first heartbeat and starts the ticker, until ctx
// ends or Stop.
func (b *Beater) Start(ctx context.Context) {
	ctx, b.stop = context.WithCancel(ctx)
	tick := b.cfg.Clock.NewTicker(HeartbeatEvery)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		defer tick.Stop()
		b.beat(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.Chan():
				b.beat(ctx)
			}
		}
	}()
}

// Stop ends the heartbeats and waits for the one being published.
func (b *Beater) Stop() {
	if b.stop != nil {
		b.stop()
	}
	b.wg.Wait()
}

// beat publishes one heartbeat. Its id is unique per process and moment,
// so the log's de-duplication never drops one.
func (b *Beater) beat(ctx context.Context) {
	now := b.cfg.Clock.Now().UTC()
	h := &domain.Heartbeat{Replica: b.cfg.Replica, Instance: b.cfg.Instance}
	if b.cfg.Fingerprint != nil {
		h.PolicyFingerprint = b.cfg.Fingerprint()
	}
	ev := domain.Event{V: domain.SchemaVersion, Kind: domain.KindReplicaHeartbeat, At: now, Heartbeat: h,
		ID: "heartbeat/" + b.cfg.Replica + "/" + b.cfg.Instance + "/" + strconv.FormatInt(now.UnixNano(), 10)}
	if err := b.cfg.Publish(ctx, ev); err != nil && ctx.Err() == nil {
		b.cfg.Logger.Warn("replica heartbeat not published", "replica_id", b.cfg.Replica, "error", err)
	}
}
