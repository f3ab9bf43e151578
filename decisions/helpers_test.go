package decisions

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/airouter/airouter/projections"
)

// t0 is the moment the test logs start.
var t0 = time.Date(2026, 9, 21, 10, 0, 0, 0, time.UTC)

// memLog is an in-memory Log, one sequence for the outcomes a rig applies
// and the events the engines publish: it records every publish and signals
// each attempt on attempts. With hold set, a publish waits for a value on
// release before it returns, so a test can act while the engine is inside
// a publish. PublishDecision keeps the log's rule: nothing is stored when
// an event on the decision's subject was stored after its cause.
type memLog struct {
	fail     error
	hold     bool
	attempts chan domain.Event
	release  chan struct{}

	mu        sync.Mutex
	seq       uint64
	published []domain.Event
	causes    []uint64 // of every PublishDecision, in order
}

func newMemLog() *memLog {
	return &memLog{attempts: make(chan domain.Event, 64), release: make(chan struct{})}
}

// append takes the next sequence for an outcome the consumer will apply.
func (l *memLog) append() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	return l.seq
}

func (l *memLog) PublishControl(ctx context.Context, ev domain.Event) (uint64, error) {
	seq, _, err := l.publish(ctx, ev, nil)
	return seq, err
}

func (l *memLog) PublishDecision(ctx context.Context, ev domain.Event, cause uint64) (uint64, bool, error) {
	return l.publish(ctx, ev, &cause)
}

// subject is what the log's subjects tell apart: the kind and the pair or
// model.
func subject(ev domain.Event) string {
	switch {
	case ev.Ban != nil:
		return "ban." + ev.Ban.Credential + "." + ev.Ban.Model
	case ev.Cooldown != nil:
		return "cooldown." + ev.Cooldown.Credential + "." + ev.Cooldown.Model
	case ev.Bench != nil:
		return "bench." + ev.Bench.Model
	case ev.Unban != nil:
		return "unban." + ev.Unban.Credential + "." + ev.Unban.Model
	}
	return string(ev.Kind)
}

func (l *memLog) publish(ctx context.Context, ev domain.Event, cause *uint64) (uint64, bool, error) {
	l.mu.Lock()
	var seq uint64
	stored := false
	if cause != nil {
		l.causes = append(l.causes, *cause)
		for _, p := range l.published {
			if subject(p) == subject(ev) && p.Seq > *cause {
				seq = p.Seq
			}
		}
	}
	if l.fail == nil && seq == 0 {
		l.seq++
		ev.Seq, seq, stored = l.seq, l.seq, true
		l.published = append(l.published, ev)
	}
	l.mu.Unlock()
	select {
	case l.attempts <- ev:
	case <-ctx.Done(): // a test that failed early stops the engine
	}
	if l.hold {
		select {
		case <-l.release:
		case <-ctx.Done():
		}
	}
	return seq, stored, l.fail
}

// next returns the next publish attempt.
func (l *memLog) next(t *testing.T) domain.Event {
	t.Helper()
	return testkit.Receive(t, "a publish", l.attempts)
}

func (l *memLog) events() []domain.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]domain.Event(nil), l.published...)
}

// checkpointRig is a rig whose engine offers a checkpoint every `every`
// events to a Checkpointer (not started) over an in-memory store.
func checkpointRig(t *testing.T, every uint64) (*rig, *Checkpointer, *memStore) {
	t.Helper()
	store := newMemStore()
	ck, err := NewCheckpointer(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, func(c *Config) {
		c.Checkpoints = ck
		c.CheckpointEvery = every
	})
	return r, ck, store
}

// memStore is an in-memory CheckpointStore that signals each save.
type memStore struct {
	saved chan savedCheckpoint

	mu  sync.Mutex
	all []savedCheckpoint
}

type savedCheckpoint struct {
	seq  uint64
	data []byte
}

func newMemStore() *memStore { return &memStore{saved: make(chan savedCheckpoint, 64)} }

func (s *memStore) SaveCheckpoint(_ context.Context, seq uint64, data []byte) error {
	cp := savedCheckpoint{seq, data}
	s.mu.Lock()
	s.all = append(s.all, cp)
	s.mu.Unlock()
	s.saved <- cp
	return nil
}

func (s *memStore) saves() []savedCheckpoint {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]savedCheckpoint(nil), s.all...)
}

// logTo is an engine logger writing every line to out, which a test
// reads while the engine writes.
func logTo(out *testkit.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Debug})
}

// threeStrikes bans a pair for an hour after three 500s.
func threeStrikes() domain.BanPolicy {
	return domain.BanPolicy{Codes: []int{500}, Default: domain.Rule{MaxAttempts: 3, Duration: time.Hour}}
}

// rig is an engine over a fresh Live, with the engine installed as its
// AfterApply and AfterPublish, an in-memory log and a fake clock at t0.
type rig struct {
	live   *projections.Live
	log    *memLog
	clock  *clockwork.FakeClock
	engine *Engine
}

// newRig builds a rig; edit adjusts the config before New.
func newRig(t *testing.T, edit func(*Config)) *rig {
	t.Helper()
	return newRigOn(t, newMemLog(), edit)
}

// newRigOn is newRig on a log shared with other rigs: replicas of one log.
func newRigOn(t *testing.T, log *memLog, edit func(*Config)) *rig {
	t.Helper()
	r := &rig{live: projections.NewLive(nil), log: log, clock: clockwork.NewFakeClockAt(t0)}
	c := Config{Log: r.log, Snapshot: r.live.Load, Clock: r.clock, Policy: threeStrikes()}
	if edit != nil {
		edit(&c)
	}
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	r.engine = e
	r.live.AfterApply = e.AfterApply
	r.live.AfterPublish = e.AfterPublish
	t.Cleanup(func() { e.Stop(); e.Wait() })
	return r
}

// apply folds ev as the next message of the log, as the consumer does.
func (r *rig) apply(ev domain.Event) domain.Event {
	ev.Seq = r.log.append()
	r.live.Apply(ev, 0)
	return ev
}

// applyAt folds ev as the log's message seq, as the consumer does with a
// message it reads.
func (r *rig) applyAt(seq uint64, ev domain.Event) domain.Event {
	ev.Seq = seq
	r.live.Apply(ev, 0)
	return ev
}

// failure is a 500 on a pair at d after t0.
func failure(d time.Duration, cred, model string) domain.Event {
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: t0.Add(d),
		Outcome: &domain.Outcome{Credential: cred, Model: model, Status: 500,
			Class: domain.ClassifyStatus(500), Attempt: 1},
	}
}

// ban is an admin ban of a pair from t0 until t0+dur.
func ban(id, cred, model string, dur time.Duration) domain.Event {
	until := t0.Add(dur)
	return domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindBanImposed, ID: id, At: t0,
		Ban: &domain.Ban{Credential: cred, Model: model, Origin: domain.OriginAdmin,
			Reason: "admin: test", Since: t0, Until: &until},
	}
}
