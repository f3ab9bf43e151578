package decisions

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// loop is the one goroutine an Engine, Prober or Checkpointer runs between
// its Start and Stop: start begins it once (a later call does nothing),
// stop cancels its context (before start, nothing), wait returns once it
// has returned (at once when it never began).
type loop struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// start runs body in a goroutine under a child of ctx that stop cancels.
// With every above zero body reads the ticks of a ticker on clock, made
// before start returns so that a fake clock sees it at once, and stopped
// when body returns; with zero it gets a nil channel.
func (l *loop) start(ctx context.Context, clock clockwork.Clock, every time.Duration, body func(ctx context.Context, tick <-chan time.Time)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		return
	}
	ctx, l.cancel = context.WithCancel(ctx)
	var ticker clockwork.Ticker
	var tick <-chan time.Time
	if every > 0 {
		ticker = clock.NewTicker(every)
		tick = ticker.Chan()
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if ticker != nil {
			defer ticker.Stop()
		}
		body(ctx, tick)
	}()
}

// stop cancels the context of what start began.
func (l *loop) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel != nil {
		l.cancel()
	}
}

// wait returns once the goroutine start began has returned.
func (l *loop) wait() { l.wg.Wait() }
