package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats-server/v2/server"
)

// defaultStartTimeout bounds the wait for the embedded server's listeners
// when ctx has no deadline.
const defaultStartTimeout = 30 * time.Second

// restoreTimeout bounds the server's restore of the store (JetStream's
// recovery, inside Server.Start) when ctx has no deadline: as long as the
// router's replay may take (a large healthy store restores in well under a
// second per million events). A damaged block can make the restore run
// without end (a garbage sequence in a record header makes the server mark
// every sequence up to it deleted), and a start must fail in bounded time
// with the cause rather than hang.
const restoreTimeout = 2 * time.Minute

// embeddedClosedConns is how many closed connections the embedded server
// remembers. Its default, 10,000, is a ring of pointers the garbage
// collector marks in every cycle, kept for a monitoring endpoint the
// router does not serve; the ring holds at least one.
const embeddedClosedConns = 8

// storeHeadroom is added to the stream limits for the server's account
// limits, so the checkpoints stream and the server's own files fit.
const storeHeadroom = 128 << 20

// natsLogger bridges nats-server's printf logger to hclog. Fatalf never
// exits: it logs and hands the message to fatal, which Open watches.
type natsLogger struct {
	log   hclog.Logger
	fatal chan error
}

func (n *natsLogger) Noticef(format string, v ...any) { n.log.Info(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Warnf(format string, v ...any)   { n.log.Warn(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Errorf(format string, v ...any)  { n.log.Error(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Debugf(format string, v ...any)  { n.log.Debug(fmt.Sprintf(format, v...)) }
func (n *natsLogger) Tracef(format string, v ...any)  { n.log.Trace(fmt.Sprintf(format, v...)) }

func (n *natsLogger) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	n.log.Error(msg)
	select {
	case n.fatal <- errors.New(msg):
	default: // the first fatal error is the one reported
	}
}

// startServer starts an embedded nats-server with JetStream in dir and
// waits until it serves clients. A failed start returns the server's own
// message and leaves nothing running.
func startServer(ctx context.Context, o Options, dir string) (*server.Server, error) {
	sopts := &server.Options{
		ServerName:             o.ServerName,
		JetStream:              true,
		StoreDir:               dir,
		DontListen:             o.Listen == "",
		NoSigs:                 true,
		DisableJetStreamBanner: true,
		MaxPayload:             maxPayload,
		JetStreamMaxStore:      64 << 20,
		JetStreamMaxMemory:     64 << 20,
		MaxClosedClients:       embeddedClosedConns,
		// The accounts' caches of subject matches (up to 1,024 entries
		// each) fill with the one-off reply subject of every acknowledged
		// publish, memory the collector marks in every cycle; at the
		// log's rates a match without them costs next to nothing.
		NoSublistCache: true,
		// A child process's server listens on loopback for its parent
		// alone; the token keeps other local users off it.
		Authorization: o.authToken,
	}
	switch {
	case o.MaxBytes < 0:
		// Unlimited: the server's own limit (a share of the disk or memory)
		// is the only bound, so leave it dynamic.
		sopts.JetStreamMaxStore, sopts.JetStreamMaxMemory = 0, 0
	case o.Storage == StorageMemory:
		sopts.JetStreamMaxMemory = o.MaxBytes + storeHeadroom
	default:
		sopts.JetStreamMaxStore = o.MaxBytes + storeHeadroom
	}
	if o.Listen != "" {
		host, port, err := splitListen(o.Listen)
		if err != nil {
			return nil, err
		}
		sopts.Host, sopts.Port = host, port
	}
	s, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("configure embedded nats-server: %w", err)
	}
	log := o.Logger.Named("nats")
	bridge := &natsLogger{log: log, fatal: make(chan error, 1)}
	s.SetLoggerV2(bridge, log.IsDebug(), log.IsTrace(), false)

	fail := func(err error) (*server.Server, error) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("start embedded nats-server in %q: %w", dir, err)
	}
	if err := startWithin(ctx, s, dir); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(defaultStartTimeout)
	if d, ok := ctx.Deadline(); ok {
		deadline = d
	}
	for {
		select {
		case err := <-bridge.fatal:
			return fail(err)
		case <-ctx.Done():
			return fail(ctx.Err())
		default:
		}
		if s.ReadyForConnections(20 * time.Millisecond) {
			break
		}
		if time.Now().After(deadline) {
			return fail(errors.New("not ready for connections in time"))
		}
	}
	select {
	case err := <-bridge.fatal:
		return fail(err)
	default:
	}
	return s, nil
}

// startWithin runs s.Start, which restores the store synchronously, and
// waits for it until ctx's deadline or restoreTimeout. Past it the server
// is told to shut down without waiting (its restore may never return) and
// the error names the store.
func startWithin(ctx context.Context, s *server.Server, dir string) error {
	started := make(chan struct{})
	go func() {
		s.Start()
		close(started)
	}()
	limit := restoreTimeout
	if d, ok := ctx.Deadline(); ok {
		limit = time.Until(d)
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-started:
		return nil
	case <-ctx.Done():
	case <-t.C:
	}
	go s.Shutdown()
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("start embedded nats-server in %q: %w while it restored the store", dir, err)
	}
	return fmt.Errorf("start embedded nats-server in %q: it did not finish restoring the store within %s "+
		"(a damaged block in the events stream can keep the restore from ending; the nats lines before this name the block)",
		dir, limit.Round(time.Millisecond))
}

// memoryDir makes the per-instance directory a memory-storage server uses
// for its bookkeeping, so it never falls back to a shared $TMPDIR path.
func memoryDir(base string) (string, error) {
	if base != "" {
		if err := os.MkdirAll(base, 0o750); err != nil {
			return "", fmt.Errorf("create events.store_dir %q: %w", base, err)
		}
	}
	dir, err := os.MkdirTemp(base, "airouter-memory-")
	if err != nil {
		return "", fmt.Errorf("create a directory for memory storage: %w", err)
	}
	return dir, nil
}
