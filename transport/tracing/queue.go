package tracing

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/airouter/airouter/redact"
)

// spanQueue is the span processor between the proxy and the exporter: an
// ended span goes into a bounded queue without waiting (a full queue drops
// it and counts it), and one goroutine exports the queue in batches, when
// a batch is full or on every tick of the interval. A failed export drops
// its batch and counts its spans; the collector's going away is logged
// once, and so is its coming back. Nothing a request does waits on the
// collector.
type spanQueue struct {
	exp      sdktrace.SpanExporter
	ch       chan sdktrace.ReadOnlySpan
	batch    int
	interval time.Duration
	timeout  time.Duration
	clock    clockwork.Clock
	log      hclog.Logger
	endpoint string

	flush chan chan struct{}
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	queueFull    atomic.Uint64
	exportFailed atomic.Uint64
	exported     atomic.Uint64
	// down is whether the last export failed; only the loop reads it.
	down bool
}

func newSpanQueue(exp sdktrace.SpanExporter, o Options) *spanQueue {
	q := &spanQueue{
		exp:      exp,
		ch:       make(chan sdktrace.ReadOnlySpan, o.QueueSize),
		batch:    o.BatchSize,
		interval: o.Interval,
		timeout:  o.ExportTimeout,
		clock:    o.Clock,
		log:      o.Logger,
		endpoint: o.Endpoint,
		flush:    make(chan chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	go q.loop()
	return q
}

// OnStart does nothing: spans are handled when they end.
func (*spanQueue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd queues a sampled span, or drops and counts it when the queue is
// full or the queue has stopped.
func (q *spanQueue) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case <-q.stop:
		q.queueFull.Add(1)
		return
	default:
	}
	select {
	case q.ch <- s:
	default:
		q.queueFull.Add(1)
	}
}

// ForceFlush exports everything queued and returns when that is done or
// ctx ends.
func (q *spanQueue) ForceFlush(ctx context.Context) error {
	ack := make(chan struct{})
	select {
	case q.flush <- ack:
	case <-q.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-ack:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown exports what is queued, stops the loop and shuts the exporter
// down, within ctx.
func (q *spanQueue) Shutdown(ctx context.Context) error {
	q.once.Do(func() { close(q.stop) })
	select {
	case <-q.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return q.exp.Shutdown(ctx)
}

func (q *spanQueue) loop() {
	defer close(q.done)
	t := q.clock.NewTicker(q.interval)
	defer t.Stop()
	buf := make([]sdktrace.ReadOnlySpan, 0, q.batch)
	for {
		select {
		case s := <-q.ch:
			if buf = append(buf, s); len(buf) >= q.batch {
				buf = q.export(buf)
			}
		case <-t.Chan():
			buf = q.export(buf)
		case ack := <-q.flush:
			buf = q.export(q.drain(buf))
			close(ack)
		case <-q.stop:
			q.export(q.drain(buf))
			return
		}
	}
}

// drain moves what is queued into buf, exporting each full batch.
func (q *spanQueue) drain(buf []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	for {
		select {
		case s := <-q.ch:
			if buf = append(buf, s); len(buf) >= q.batch {
				buf = q.export(buf)
			}
		default:
			return buf
		}
	}
}

// export sends one batch and returns buf emptied. The deadline is on the
// real clock: the network stack reads it.
func (q *spanQueue) export(buf []sdktrace.ReadOnlySpan) []sdktrace.ReadOnlySpan {
	if len(buf) == 0 {
		return buf
	}
	ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
	err := q.exp.ExportSpans(ctx, buf)
	cancel()
	n := uint64(len(buf))
	switch {
	case err != nil:
		q.exportFailed.Add(n)
		if !q.down {
			q.down = true
			q.log.Warn("trace collector unreachable; spans are dropped and counted until it answers",
				"endpoint", q.endpoint, "error", redact.String(err.Error()))
		}
	default:
		q.exported.Add(n)
		if q.down {
			q.down = false
			q.log.Info("trace collector reachable again", "endpoint", q.endpoint)
		}
	}
	clear(buf)
	return buf[:0]
}
