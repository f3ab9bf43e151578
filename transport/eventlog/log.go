package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Async publish tuning (jetstream.md §3 and §4.3): a small in-flight window
// keeps ack latency low without costing throughput, and a timeout makes
// sure no future hangs when the connection goes away.
const (
	asyncMaxPending = 2048
	asyncTimeout    = 5 * time.Second
	// pingInterval and maxPingsOut detect a dead external server in
	// 10 to 15 s.
	pingInterval = 5 * time.Second
	maxPingsOut  = 2
)

// Log is the event log. It is safe for concurrent use.
type Log struct {
	opts     Options
	log      hclog.Logger
	external bool

	lock    *dirLock
	tempDir string // memory storage's private directory, removed on Close
	srv     *server.Server
	nc      *nats.Conn
	js      jetstream.JetStream
	events  jetstream.Stream
	ckpts   jetstream.Stream
	ncDone  chan struct{} // closed when nc is closed

	queue     chan pubItem
	closing   atomic.Bool
	stopPub   chan struct{} // closed by Close: drain the queue and stop
	abortPub  chan struct{} // closed by Close when its deadline passes
	pubDone   chan struct{}
	stopTick  chan struct{}
	tickDone  chan struct{}
	closeOnce sync.Once
	closeErr  error

	// Outages (outage.go): publishes nobody answered, sent again first,
	// and whether the stream left the last publish unanswered; replacements
	// of stalled consumers under way (consume_watch.go).
	retry      chan pubItem
	streamDown atomic.Bool
	batch      batch        // the publisher goroutine's
	subjects   subjectCache // the publisher goroutine's
	// unsent counts the events taken from the queue (or sent back to the
	// retry queue) and not yet handed to the client: Stats.Pending.
	unsent   atomic.Int64
	restarts sync.WaitGroup

	counters
	reporter *lossReporter
	skips    skipLog

	consMu    sync.Mutex
	consumers map[*consumer]struct{}
}

// newLog builds a Log's channels and bookkeeping from defaulted options;
// Open and OpenReader both start from it.
func newLog(o Options) *Log {
	l := &Log{
		opts:      o,
		log:       o.Logger.Named("eventlog"),
		external:  o.NatsURL != "",
		ncDone:    make(chan struct{}),
		queue:     make(chan pubItem, o.QueueSize),
		retry:     make(chan pubItem, retryCap),
		stopPub:   make(chan struct{}),
		abortPub:  make(chan struct{}),
		pubDone:   make(chan struct{}),
		stopTick:  make(chan struct{}),
		tickDone:  make(chan struct{}),
		consumers: make(map[*consumer]struct{}),
	}
	l.reporter = newLossReporter(l.log, &l.counters)
	l.batch.send = l.publishAsync
	return l
}

// Open starts (or connects to) NATS, makes sure both streams exist and
// starts the publisher. On error nothing is left running and the store
// lock is released.
func Open(ctx context.Context, opts Options) (*Log, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := newLog(o)
	if err := l.open(ctx); err != nil {
		return nil, errors.Join(err, l.teardown())
	}
	if o.noPublisher {
		close(l.pubDone)
	} else {
		l.batch.maxBytes = batchLimit(l.nc.MaxPayload())
		go l.publisher()
	}
	go l.reportLoop()
	return l, nil
}

func (l *Log) open(ctx context.Context) error {
	o := l.opts
	if l.external && (o.Listen != "" || o.StoreDir != "") {
		l.log.Warn("events.listen and events.store_dir are ignored with an external nats_url")
	}
	if !l.external {
		dir := o.StoreDir
		if o.Storage == StorageMemory {
			d, err := memoryDir(o.StoreDir)
			if err != nil {
				return err
			}
			l.tempDir, dir = d, d
		} else {
			lk, err := lockDir(dir)
			if err != nil {
				return err
			}
			l.lock = lk
		}
		s, err := startServer(ctx, o, dir)
		if err != nil {
			return err
		}
		l.srv = s
	}
	if err := l.connect(); err != nil {
		return err
	}
	js, err := jetstream.New(l.nc,
		jetstream.WithPublishAsyncMaxPending(asyncMaxPending),
		jetstream.WithPublishAsyncTimeout(asyncTimeout),
		jetstream.WithPublishAsyncErrHandler(l.asyncErr),
		jetstream.WithPublishAsyncAckHandler(l.asyncAck),
	)
	if err != nil {
		return fmt.Errorf("create jetstream context: %w", err)
	}
	l.js = js
	if _, err := js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("check jetstream is available: %w", err)
	}
	if l.events, err = l.ensureStream(ctx, eventsConfig(o)); err != nil {
		return err
	}
	if l.ckpts, err = l.ensureStream(ctx, checkpointsConfig(o)); err != nil {
		return err
	}
	l.log.Info("event log open", "stream", EventsStream, "storage", o.Storage,
		"external", l.external, "last_seq", l.events.CachedInfo().State.LastSeq)
	return nil
}

func (l *Log) connect() error {
	log := l.log
	nopts := []nats.Option{
		nats.Name("airouter " + l.opts.ServerName),
		nats.ClosedHandler(func(*nats.Conn) { close(l.ncDone) }),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				l.setLastError(fmt.Errorf("nats disconnected: %w", err))
				log.Warn("disconnected from nats", "error", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("reconnected to nats", "server", c.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			l.setLastError(fmt.Errorf("nats: %w", err))
			log.Warn("nats asynchronous error", "error", err)
		}),
	}
	url := ""
	if l.external {
		url = l.opts.NatsURL
		// Reconnect forever (an outage only delays events), and notice
		// a server that vanished without closing the connection (a host
		// crash, a partition) within seconds, not the default minutes.
		nopts = append(nopts, nats.MaxReconnects(-1),
			nats.PingInterval(pingInterval), nats.MaxPingsOutstanding(maxPingsOut))
		if l.opts.CredsFile != "" {
			nopts = append(nopts, nats.UserCredentials(l.opts.CredsFile))
		}
	} else {
		nopts = append(nopts, nats.InProcessServer(l.srv))
	}
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		if l.external {
			return fmt.Errorf("connect to nats %s: %w", RedactURLs(url), err)
		}
		return fmt.Errorf("connect to the embedded nats-server: %w", err)
	}
	l.nc = nc
	return nil
}

// RedactURLs drops the user info (user:password@, token@) of every URL in a
// comma-separated list of NATS URLs, for messages.
func RedactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if at := strings.LastIndex(p, "@"); at >= 0 {
			scheme := ""
			if k := strings.Index(p, "://"); k >= 0 && k < at {
				scheme = p[:k+3]
			}
			parts[i] = scheme + "***@" + p[at+1:]
		}
	}
	return strings.Join(parts, ",")
}

// ClientURL is the embedded server's NATS URL when Options.Listen is set,
// else "".
func (l *Log) ClientURL() string {
	if l.srv == nil || l.opts.Listen == "" {
		return ""
	}
	return l.srv.ClientURL()
}

// Close flushes and stops everything, in the order of jetstream.md §1.5:
// stop accepting events, drain the queue, wait for outstanding acks (until
// ctx is done, then give up on them), stop consumers, drain the connection,
// shut the embedded server down and release the store lock. Events still
// queued when ctx ends are counted as dropped. Calling Close again returns
// the first result.
func (l *Log) Close(ctx context.Context) error {
	l.closeOnce.Do(func() { l.closeErr = l.close(ctx) })
	return l.closeErr
}

func (l *Log) close(ctx context.Context) error {
	l.closing.Store(true)
	close(l.stopPub)
	select {
	case <-l.pubDone:
	case <-ctx.Done():
		close(l.abortPub)
		<-l.pubDone
	}
	l.discardQueue()
	select {
	case <-l.js.PublishAsyncComplete():
	case <-ctx.Done():
		l.log.Warn("giving up on unacknowledged events", "pending", l.js.PublishAsyncPending())
		l.js.CleanupPublisher()
	}
	l.stopConsumers()
	close(l.stopTick)
	<-l.tickDone
	l.restarts.Wait() // no check runs now, so none starts
	l.reporter.tick()
	var errs []error
	// Drain closes a connection that is reconnecting, and says so; during
	// an outage there is nothing to drain, and what was queued is counted.
	if err := l.nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionReconnecting) {
		errs = append(errs, fmt.Errorf("drain nats connection: %w", err))
	}
	select {
	case <-l.ncDone:
	case <-ctx.Done():
		l.nc.Close()
	}
	errs = append(errs, l.teardown())
	s := l.Stats()
	l.log.Info("event log closed", "published", s.Published, "dropped", s.Dropped, "failed", s.Failed)
	return errors.Join(errs...)
}

// discardQueue counts what the publisher left in the queue (and in the
// retry queue) as dropped and releases waiting Flush calls.
func (l *Log) discardQueue() {
	for {
		select {
		case it := <-l.retry:
			l.unsent.Add(-int64(it.events))
			l.dropped.Add(uint64(it.events))
		case it := <-l.queue:
			if it.flushed != nil {
				close(it.flushed)
				continue
			}
			l.dropped.Add(1)
		default:
			return
		}
	}
}

// teardown stops the server and releases what open acquired; it is safe on
// a partly opened Log.
func (l *Log) teardown() error {
	var errs []error
	if l.nc != nil && !l.nc.IsClosed() {
		l.nc.Close()
	}
	if l.srv != nil {
		l.srv.Shutdown()
		l.srv.WaitForShutdown()
	}
	if err := l.lock.release(); err != nil {
		errs = append(errs, err)
	}
	if l.tempDir != "" {
		if err := os.RemoveAll(l.tempDir); err != nil {
			errs = append(errs, fmt.Errorf("remove memory storage directory: %w", err))
		}
	}
	return errors.Join(errs...)
}
