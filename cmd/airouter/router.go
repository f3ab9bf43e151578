package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/decisions"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/replicas"
	"github.com/airouter/airouter/transport/eventlog"
	"github.com/airouter/airouter/transport/proxy"
	"github.com/airouter/airouter/transport/tracing"
)

// catchUpTimeout bounds the replay before the router reports ready.
const catchUpTimeout = 2 * time.Minute

// router is one running airouter: its log, projections, policy engine and
// HTTP surfaces.
type router struct {
	cfg    *config.Config
	logger hclog.Logger
	log    *eventlog.Log
	live   *projections.Live
	engine *decisions.Engine
	// prober claims recovery probes (recovery.go); replica names this
	// process in the claims.
	prober *decisions.Prober
	// replica is this router's events.replica_id, on its outcomes,
	// heartbeats and probe claims; instance is random per process, on its
	// heartbeats; tracker folds the replicas' heartbeats (replicas.go).
	replica  string
	instance string
	tracker  *replicas.Tracker
	beater   *replicas.Beater
	// own is this replica's own ban policy (policy.go): its file's, which
	// decides until a policy.changed is on the log.
	own   atomic.Pointer[ownPolicy]
	proxy *proxy.Proxy
	// tracer is nil while tracing is off (config otel).
	tracer *tracing.Tracer
	admin  *adminapi.API
	// reload applies the config file again on SIGHUP and POST
	// /api/reload (reload.go).
	reload *reloader
	stop   func() // stops the consumer
	cancel context.CancelFunc
	ckpt   *decisions.Checkpointer
	// bootSeq is the log's last sequence at start: outcomes up to it were
	// decided before this process started.
	bootSeq uint64
	// damage is what the log lost before start (eventlog.Log.Damage).
	damage eventlog.Damage
	// clock is the router's one clock: the decision engine's, the proxy's
	// (its time, timers and ticker; outcomes are stamped with it), the
	// admin API's and the projections' (the swaps of a backlog).
	clock clockwork.Clock
	once  sync.Once
	err   error
}

// startRouter opens the log, rebuilds the projections from the latest
// checkpoint and the events after it, and builds the HTTP surfaces. It
// returns once the projections have caught up with the log.
func startRouter(ctx context.Context, cfg *config.Config, logger hclog.Logger) (*router, error) {
	return startRouterOn(ctx, cfg, logger, clockwork.NewRealClock())
}

// startRouterOn is startRouter on clock: the decision engine, the proxy and
// the admin API all read it (tests move a fake one past a ban's end).
func startRouterOn(ctx context.Context, cfg *config.Config, logger hclog.Logger, clock clockwork.Clock) (*router, error) {
	started := time.Now() // the log line reports the real start-up time, whatever clock runs
	lg, err := eventlog.Open(ctx, logOptions(cfg, logger))
	if err != nil {
		return nil, fmt.Errorf("start the event log: %w", err)
	}
	rt := &router{cfg: cfg, logger: logger, log: lg, clock: clock, replica: cfg.ReplicaName(),
		instance: replicas.NewInstance()}
	rt.tracker = replicas.NewTracker(rt.replica, rt.instance, logger.Named("replicas"))
	rt.setOwnPolicy(cfg.BanPolicy())
	if err := rt.restoreProjections(ctx); err != nil {
		_ = lg.Close(context.Background())
		return nil, err
	}
	if err := rt.buildSurfaces(); err != nil {
		_ = lg.Close(context.Background())
		return nil, err
	}
	if err := rt.follow(ctx); err != nil {
		rt.close()
		return nil, err
	}
	if err := rt.announcePolicy(ctx, cfg.BanPolicy()); err != nil {
		// The router still routes and decides, under the policy in force;
		// a later start or reload announces its own again.
		logger.Error("announcing the ban policy failed; deciding under the policy in force", "error", err)
	}
	rt.proxy.Start(context.Background())
	logger.Info("projections rebuilt", "applied_seq", rt.live.Load().Seq(),
		"took", time.Since(started).Round(time.Millisecond).String())
	return rt, nil
}

func logOptions(cfg *config.Config, logger hclog.Logger) eventlog.Options {
	e := cfg.Events
	maxBytes := e.MaxBytes
	if maxBytes < 0 {
		maxBytes = -1 // unlimited
	}
	storeDir := e.StoreDir
	if !e.Embedded() {
		storeDir = "" // an external cluster keeps the log; nothing is stored here
	}
	o := eventlog.Options{
		StoreDir:  storeDir,
		Storage:   e.Storage,
		NatsURL:   e.NATSURL,
		CredsFile: e.CredsFile,
		Listen:    e.Listen,
		MaxAge:    e.MaxAge,
		MaxBytes:  maxBytes,
		Replicas:  e.Replicas,
		Logger:    logger,
	}
	if e.ServerProcess {
		o.Process = &eventlog.Process{Command: serverProcess}
	}
	return o
}

// restoreProjections builds the projections from the latest checkpoint;
// follow then replays the log after it.
func (rt *router) restoreProjections(ctx context.Context) error {
	last, err := rt.log.LastSeq(ctx)
	if err != nil {
		return fmt.Errorf("read the log position: %w", err)
	}
	if rt.damage, err = rt.log.Damage(ctx); err != nil {
		return fmt.Errorf("check the log for lost events: %w", err)
	}
	if d := rt.damage; d.Missing > 0 {
		rt.logger.Error("the event log lost events; starting from what it and the checkpoint hold",
			"missing_events", d.Missing, "missing_from_seq", d.FromSeq, "last_stored_seq", d.LastStored, "cause", d.Cause)
	}
	state := rt.restore(ctx, last)
	// A checkpoint kept ahead of a damaged stream moved the stream past it.
	last = max(last, state.Seq())
	rt.live = projections.NewLive(state)
	rt.live.Clock = rt.clock
	rt.bootSeq = last
	rt.ckpt, err = decisions.NewCheckpointer(rt.log, rt.logger.Named("checkpoint"))
	return err
}

// installEngine builds the decision engine over the projections, the log and
// the admin API's observer, and installs it as the writer's AfterApply and
// AfterPublish (which hands snapshots to the checkpointer), before the
// first event is applied; follow starts it once caught up.
func (rt *router) installEngine() error {
	dc := decisions.Config{
		Log:         rt.log,
		Snapshot:    rt.live.Load,
		Clock:       rt.clock,
		Policy:      rt.own.Load().ban,
		BootSeq:     rt.bootSeq,
		Observe:     rt.observe,
		Checkpoints: rt.ckpt,
		Logger:      rt.logger.Named("policy"),
	}
	e, err := decisions.New(dc)
	if err != nil {
		return err
	}
	rt.engine = e
	rt.live.AfterApply = e.AfterApply
	rt.live.AfterPublish = e.AfterPublish
	return nil
}

// follow installs the decision engine, replays the log after the restored
// state and keeps following it; it returns once the projections have
// caught up with the log as it was at start, with the engine publishing.
func (rt *router) follow(ctx context.Context) error {
	if err := rt.installEngine(); err != nil {
		return err
	}
	last := rt.bootSeq
	runCtx, cancel := context.WithCancel(context.Background())
	rt.cancel = cancel
	rt.ckpt.Start(runCtx)
	stop, err := rt.log.Consume(runCtx, rt.live.Load().Pos().ResumeSeq(), rt.live.Apply)
	if err != nil {
		cancel()
		return fmt.Errorf("follow the log: %w", err)
	}
	rt.stop = stop
	wctx, wcancel := context.WithTimeout(ctx, catchUpTimeout)
	defer wcancel()
	stored, err := rt.log.Bounds(wctx)
	if err != nil {
		stop()
		cancel()
		return fmt.Errorf("read what the log stores: %w", err)
	}
	if stored.LastSeq == 0 {
		// Nothing stored (a new log, or every event aged out while the
		// router was down): the checkpoint is all there is to wait for.
		last = 0
	}
	if rt.damage.Missing > 0 {
		// The stream's missing tail will never be delivered.
		last = min(last, rt.damage.LastStored)
	}
	if err := rt.live.WaitFor(wctx, last); err != nil {
		stop()
		cancel()
		return fmt.Errorf("replay the log up to sequence %d: %w", last, err)
	}
	rt.engine.Start(runCtx)
	rt.startBeater(runCtx)
	if err := rt.startProber(runCtx); err != nil {
		stop()
		cancel()
		return err
	}
	return nil
}

// restore returns the state of the latest checkpoint, or a fresh state when
// there is none, it cannot be read, or it is ahead of the log (a log
// recreated under it) other than by damage to the router's own store
// (keepAhead).
func (rt *router) restore(ctx context.Context, last uint64) *projections.State {
	seq, data, ok, err := rt.log.LoadCheckpoint(ctx)
	switch {
	case err != nil:
		rt.logger.Warn("reading the checkpoint failed; replaying the whole log", "error", err)
	case !ok:
	case seq > last:
		if st := rt.keepAhead(ctx, seq, data, last); st != nil {
			return st
		}
		rt.logger.Warn("checkpoint is ahead of the log; replaying the whole log", "checkpoint_seq", seq, "last_seq", last)
	default:
		st, err := projections.UnmarshalCheckpoint(data)
		if err != nil {
			rt.logger.Warn("checkpoint unreadable; replaying the whole log", "error", err)
			break
		}
		rt.logger.Debug("checkpoint restored", "seq", st.Seq())
		return st
	}
	return projections.NewState()
}

// handler sends /v1/ straight to the proxy and everything else through the
// admin API's router. The proxy's path skips gorilla/mux: its matching and
// the two request copies it makes to carry route variables cost about a
// microsecond a request, which the proxy's CPU budget does not have. The
// proxy answers an endpoint it does not serve with the 404 envelope, as
// the router's NotFoundHandler does.
func (rt *router) handler() http.Handler {
	r := mux.NewRouter()
	rt.admin.Register(r)
	rt.admin.RegisterEvents(r, adminapi.EventsOptions{Log: eventsLog{rt.log}, Clock: rt.clock})
	rt.admin.RegisterReload(r, rt.reload.serveHTTP)
	r.NotFoundHandler = http.HandlerFunc(proxy.NotFound)
	r.MethodNotAllowedHandler = http.HandlerFunc(proxy.NotFound)
	api := rt.proxy.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/v1/") {
			api.ServeHTTP(w, req)
			return
		}
		r.ServeHTTP(w, req)
	})
}

// close stops following the log, saves a final checkpoint and closes the
// log, flushing pending events. It is safe to call more than once.
func (rt *router) close() error {
	rt.once.Do(func() {
		if rt.proxy != nil {
			rt.proxy.Close()
		}
		rt.stopTracing()
		if rt.stop != nil {
			rt.stop()
		}
		if rt.cancel != nil {
			rt.cancel()
		}
		if rt.engine != nil {
			rt.engine.Wait()
		}
		if rt.prober != nil {
			rt.prober.Wait()
		}
		if rt.beater != nil {
			rt.beater.Stop()
		}
		var errs []error
		if rt.ckpt != nil {
			rt.ckpt.Wait()
			// The consumer has stopped: the writer's state is ours now.
			if err := rt.ckpt.SaveNow(rt.live.State()); err != nil {
				errs = append(errs, err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.log.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close the event log: %w", err))
		}
		rt.err = errors.Join(errs...)
	})
	return rt.err
}
