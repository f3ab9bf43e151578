package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/airouter/airouter/redact"
	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pingInterval and maxPingsOut make the client notice an external server
// that vanished without closing the connection (a host crash, a partition)
// within 10 to 15 s instead of the library's default minutes.
const (
	pingInterval = 5 * time.Second
	maxPingsOut  = 2
)

// conn is one connection to the log's NATS: the embedded nats-server it
// runs (on the locked store directory, a private directory for memory
// storage, or a copy of a store for a Reader) or an external cluster, the
// client connection, its JetStream context and the two streams. Log and
// Reader each own one; their publisher and consumers use it and never open
// or close it.
type conn struct {
	log      hclog.Logger
	errs     *lastError
	external bool

	lock    *dirLock       // nil unless this process owns a file store
	mark    *seqMark       // the store's acknowledged-sequence mark, nil unless lock
	tempDir string         // a private directory removed on teardown, or ""
	srv     *server.Server // the embedded server in this process, or nil
	proc    *serverProc    // the embedded server's own process, or nil (process.go)
	ncDone  chan struct{}  // closed when the last connection is closed by close or teardown
	// priorMark is the mark found at open (of the store, or of the store a
	// Reader copied): the highest sequence acknowledged before.
	priorMark uint64
	// msgsDir holds the events stream's block files when this process
	// runs the embedded file store; "" otherwise (durable.go).
	msgsDir string
	// jsConfig is the embedded file store's JetStream configuration, for
	// a restart after a store fault (store.go); nil otherwise.
	jsConfig *server.JetStreamConfig
	// procSeen and procFaultSeen are the server process's restarts that
	// checkProcess has handled.
	procSeen, procFaultSeen uint64

	// The current session: the client connection, its JetStream context and
	// the two streams. A connection the client library closed by itself is
	// replaced by a new session (redial.go); users load it for each use.
	sess atomic.Pointer[session]
	redial
}

func newConn(log hclog.Logger, errs *lastError, natsURL string) *conn {
	c := &conn{log: log, errs: errs, external: natsURL != "", ncDone: make(chan struct{})}
	c.sess.Store(&session{})
	c.quit = make(chan struct{})
	return c
}

// openLog starts the embedded server (or checks that none is wanted),
// connects, and makes sure both streams exist with the options' limits. js
// configures the JetStream context (the publisher's async handlers). On
// error the caller tears down what was started.
func (c *conn) openLog(ctx context.Context, o Options, js ...jetstream.JetStreamOpt) error {
	if c.external && (o.Listen != "" || o.StoreDir != "") {
		c.log.Warn("events.listen and events.store_dir are ignored with an external nats_url")
	}
	if !c.external {
		if err := c.startEmbedded(ctx, o); err != nil {
			return err
		}
	}
	if err := c.connect("airouter "+o.ServerName, o.NatsURL, o.CredsFile); err != nil {
		return err
	}
	if err := c.newJetStream(js...); err != nil {
		return err
	}
	if _, err := c.cur().js.AccountInfo(ctx); err != nil {
		return fmt.Errorf("check jetstream is available: %w", err)
	}
	var err error
	if c.cur().events, err = c.openStream(ctx, eventsConfig(o)); err != nil {
		return err
	}
	if c.cur().ckpts, err = c.openStream(ctx, checkpointsConfig(o)); err != nil {
		return err
	}
	c.log.Info("event log open", "stream", EventsStream, "storage", o.Storage,
		"external", c.external, "last_seq", c.cur().events.CachedInfo().State.LastSeq)
	return nil
}

// startEmbedded starts the embedded server: on the store directory, locked
// against a second airouter, or for memory storage on a fresh private
// directory.
func (c *conn) startEmbedded(ctx context.Context, o Options) error {
	dir := o.StoreDir
	if o.Storage == StorageMemory {
		d, err := memoryDir(o.StoreDir)
		if err != nil {
			return err
		}
		c.tempDir, dir = d, d
	} else {
		lk, err := lockDir(dir)
		if err != nil {
			return err
		}
		c.lock = lk
		c.priorMark = readMark(dir)
		c.msgsDir = eventsMsgsDir(dir)
		if c.mark, err = openMark(dir, c.priorMark); err != nil {
			return err
		}
	}
	if o.Process != nil && o.Storage == StorageFile {
		p, err := startProcess(ctx, o, dir, c.lock.f)
		c.proc = p
		return err
	}
	s, err := startServer(ctx, o, dir)
	if err != nil {
		return err
	}
	c.srv = s
	if o.Storage != StorageMemory {
		c.recordJetStream(dir)
	}
	return nil
}

// connect opens the client connection under name: in-process to the
// embedded server, over loopback to its own process, or to the external
// servers at url.
func (c *conn) connect(name, url, credsFile string) error {
	switch {
	case c.proc != nil:
		url = c.proc.url
	case !c.external:
		url = ""
	}
	c.name, c.url, c.creds = name, url, credsFile
	nc, err := c.dial()
	if err != nil {
		if c.external {
			return fmt.Errorf("connect to nats %s: %w", redact.URLs(url), err)
		}
		return fmt.Errorf("connect to the embedded nats-server: %w", err)
	}
	c.cur().nc = nc
	return nil
}

// dial opens one client connection with the log's handlers. The client
// reconnects by itself forever after a lost connection (an outage only
// delays events); a connection it closes for good (a protocol error the
// server answered with -ERR) is replaced by redial.
func (c *conn) dial() (*nats.Conn, error) {
	log := c.log
	nopts := []nats.Option{
		nats.Name(c.name),
		nats.MaxReconnects(-1),
		nats.ClosedHandler(c.closed),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				c.errs.set(fmt.Errorf("nats disconnected: %w", err))
				log.Warn("disconnected from nats", "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("reconnected to nats", "server", nc.ConnectedUrlRedacted(), "addr", nc.ConnectedAddr())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.errs.set(fmt.Errorf("nats: %w", err))
			log.Warn("nats asynchronous error", "error", err)
		}),
	}
	if c.external {
		nopts = append(nopts, nats.PingInterval(pingInterval), nats.MaxPingsOutstanding(maxPingsOut))
		if c.creds != "" {
			nopts = append(nopts, nats.UserCredentials(c.creds))
		}
	} else {
		// The embedded server, in this process or its own: a reconnect
		// costs nothing, so do not wait the library's 2 s between tries.
		nopts = append(nopts, nats.ReconnectWait(inProcessReconnectWait))
		if c.proc != nil {
			nopts = append(nopts, c.proc.clientOptions()...)
		} else {
			nopts = append(nopts, nats.InProcessServer(c.srv))
		}
	}
	return nats.Connect(c.url, nopts...)
}

func (c *conn) newJetStream(opts ...jetstream.JetStreamOpt) error {
	c.jsOpts = opts
	js, err := jetstream.New(c.cur().nc, opts...)
	if err != nil {
		return fmt.Errorf("create jetstream context: %w", err)
	}
	c.cur().js = js
	return nil
}

// errUnreachable is returned by queries made while the connection is down,
// instead of waiting for their timeout.
var errUnreachable = errors.New("the event log is unreachable (not connected to NATS)")

// reconnecting reports whether the connection is down and the client is
// trying to get it back (or redial is replacing a connection the client
// closed); requests made now would wait for their timeout. A connection
// closed by close or teardown is not reconnecting: requests fail at once,
// saying it is closed.
func (c *conn) reconnecting() bool {
	nc := c.cur().nc
	return nc != nil && (nc.IsReconnecting() || nc.Status() == nats.CONNECTING ||
		(nc.IsClosed() && !c.closing.Load()))
}

// connected reports whether the client is connected now.
func (c *conn) connected() bool {
	nc := c.cur().nc
	return nc != nil && nc.IsConnected()
}

// close drains the connection (until ctx is done, then closes it) and
// tears down the rest. Drain closes a connection that is reconnecting, and
// says so; during an outage there is nothing to drain, and that is no
// error; a connection the client closed by itself has nothing to drain
// either.
func (c *conn) close(ctx context.Context) error {
	c.stopRedial()
	var errs []error
	nc := c.cur().nc
	if !nc.IsClosed() {
		if err := nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionReconnecting) {
			errs = append(errs, fmt.Errorf("drain nats connection: %w", err))
		}
		select {
		case <-c.ncDone:
		case <-ctx.Done():
			nc.Close()
		}
	}
	nc.Close() // the server process stops next: no reconnect to it
	if err := c.stopProcess(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, c.teardown())...)
}

// stopProcess stops the server process, if any, within ctx; only the
// first call stops it.
func (c *conn) stopProcess(ctx context.Context) error {
	if c.proc == nil {
		return nil
	}
	return c.proc.close(ctx)
}

// teardown closes the connection, stops the embedded server and releases
// the store lock and the private directory; it is safe on a partly opened
// conn.
func (c *conn) teardown() error {
	c.stopRedial()
	var errs []error
	if nc := c.cur().nc; nc != nil && !nc.IsClosed() {
		nc.Close()
	}
	if c.srv != nil {
		c.srv.Shutdown()
		c.srv.WaitForShutdown()
	}
	if err := c.stopProcess(context.Background()); err != nil {
		errs = append(errs, err)
	}
	if err := c.mark.close(); err != nil {
		errs = append(errs, fmt.Errorf("close the sequence mark: %w", err))
	}
	if err := c.lock.release(); err != nil {
		errs = append(errs, err)
	}
	if c.tempDir != "" {
		if err := os.RemoveAll(c.tempDir); err != nil {
			errs = append(errs, fmt.Errorf("remove the private store directory: %w", err))
		}
	}
	return errors.Join(errs...)
}
