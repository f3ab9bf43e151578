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

// memLog is an in-memory Log: it records every publish and signals each
// attempt on attempts. With hold set, a publish waits for a value on
// release before it returns, so a test can act while the engine is inside
// a publish.
type memLog struct {
	fail     error
	hold     bool
	attempts chan domain.Event
	release  chan struct{}

	mu        sync.Mutex
	published []domain.Event
}

func newMemLog() *memLog {
	return &memLog{attempts: make(chan domain.Event, 64), release: make(chan struct{})}
}

func (l *memLog) PublishControl(ctx context.Context, ev domain.Event) (uint64, error) {
	l.mu.Lock()
	if l.fail == nil {
		l.published = append(l.published, ev)
	}
	n := uint64(len(l.published))
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
	return n, l.fail
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
// AfterApply, an in-memory log and a fake clock at t0.
type rig struct {
	live   *projections.Live
	log    *memLog
	clock  *clockwork.FakeClock
	engine *Engine
	seq    uint64
}

// newRig builds a rig; edit adjusts the config before New.
func newRig(t *testing.T, edit func(*Config)) *rig {
	t.Helper()
	r := &rig{live: projections.NewLive(nil), log: newMemLog(), clock: clockwork.NewFakeClockAt(t0)}
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
	t.Cleanup(func() { e.Stop(); e.Wait() })
	return r
}

// apply folds ev as the next message of the log, as the consumer does.
func (r *rig) apply(ev domain.Event) domain.Event {
	r.seq++
	ev.Seq = r.seq
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
