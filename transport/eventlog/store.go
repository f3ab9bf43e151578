package eventlog

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A full store. When the embedded server cannot write a message (ENOSPC)
// its file store and the stream keep that write error for good: every
// later publish goes unanswered (it times out), JetStream stays enabled
// and the connection stays up, and freeing space changes nothing until
// JetStream is started again. An external server that is out of storage
// answers publishes with "insufficient resources" (10023) or "insufficient
// storage resources available" (10047). Either way the log records the
// cause (Stats.StoreFault), is not writable, and holds outcomes in its
// queue as during an outage instead of sending them to time out.
//
// The embedded store is checked once a second (the server's own health
// check names a stream's write error). While it is faulted and the store
// directory has storeRoom free again, JetStream is shut down and enabled
// again in place: the streams are recovered from their files (everything
// acknowledged was written before the failed write), the same connection
// carries on, and the consumers are re-created from where they were. This
// takes milliseconds. A fault an external server reported is cleared by
// the next publish it acknowledges; the publisher tries again after a
// backoff.
const (
	// storeRoom is the free space the embedded store directory needs
	// before JetStream is restarted on it, so it does not fill again at
	// once.
	storeRoom = 8 << 20
	// storeRetry is the pause before a publisher held by a fault an
	// external server reported sends again.
	storeRetry = 2 * time.Second
)

// JetStream error codes that mean the server has no room for a message.
const (
	errCodeInsufficientResources    jetstream.ErrorCode = 10023
	errCodeStorageResourcesExceeded jetstream.ErrorCode = 10047
)

// storeFullCause names err as a full store ("store full: ..."), or returns
// "" when err is something else.
func storeFullCause(err error) string {
	if err == nil {
		return ""
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeInsufficientResources, errCodeStorageResourcesExceeded:
			return "store full: " + apiErr.Description
		}
	}
	if strings.Contains(err.Error(), "no space left") {
		return "store full: no space left on device"
	}
	return ""
}

// storeState is what the log knows of its store's health.
type storeState struct {
	fault    atomic.Pointer[string] // nil or "": the store writes
	faultAt  atomic.Int64           // unix nanos the fault was last reported
	restarts atomic.Uint64          // JetStream restarts after a fault
	// restartErr is the last restart's failure, logged once until a
	// restart succeeds.
	restartErr atomic.Pointer[string]
}

func (s *storeState) get() string {
	if p := s.fault.Load(); p != nil {
		return *p
	}
	return ""
}

// set records cause; it reports whether the store was fine until now.
func (s *storeState) set(cause string) bool {
	s.faultAt.Store(time.Now().UnixNano())
	old := s.fault.Swap(&cause)
	return old == nil || *old == ""
}

// clear reports whether there was a fault.
func (s *storeState) clear() bool {
	old := s.fault.Swap(nil)
	return old != nil && *old != ""
}

// reportStoreFull records err's cause when err says the store is full, and
// reports whether it did.
func (p *publisher) reportStoreFull(err error) bool {
	cause := storeFullCause(err)
	if cause == "" {
		return false
	}
	if p.store.set(cause) {
		p.log.Error("the event log's store is full; holding events until it takes them", "cause", cause)
	}
	p.errs.set(errors.New(cause))
	return true
}

// storeHeld reports whether the publisher must not send now: the store is
// faulted and, for an external server, the retry pause has not passed.
func (p *publisher) storeHeld() bool {
	if p.store.get() == "" {
		return false
	}
	if p.conn.external {
		return time.Since(time.Unix(0, p.store.faultAt.Load())) < storeRetry
	}
	return true
}

// checkStore is the embedded store's once-a-second check: it records a
// stream's write error (or JetStream disabled) as the fault, restarts
// JetStream when there is room again, and clears the fault once the
// server's health check passes. restarted runs after a restart.
func (c *conn) checkStore(st *storeState, errs *lastError, restarted func()) {
	if c.srv == nil || c.jsConfig == nil || c.closing.Load() {
		return
	}
	cause := storeFault(c.srv)
	if !c.noteFault(st, errs, cause) {
		return
	}
	if free, err := freeBytes(c.srv.StoreDir()); err != nil || free < storeRoom {
		return
	}
	start := time.Now()
	if err := c.restartJetStream(); err != nil {
		errs.set(fmt.Errorf("%s; restart jetstream: %w", cause, err))
		if msg := err.Error(); st.restartErr.Swap(&msg) == nil {
			c.log.Error("cannot restart jetstream on the store; trying again every second", "error", err)
		}
		return
	}
	st.restartErr.Store(nil)
	st.restarts.Add(1)
	if cause = storeFault(c.srv); cause == "" {
		st.clear()
	}
	c.log.Warn("restarted jetstream after a store fault", "took", time.Since(start), "fault", cause)
	if restarted != nil {
		restarted()
	}
}

// noteFault records the embedded store's fault as its check found it
// (cause, "" when it writes), logging the change either way, and reports
// whether the store is faulted.
func (c *conn) noteFault(st *storeState, errs *lastError, cause string) bool {
	if cause == "" {
		if st.clear() {
			c.log.Info("the event log's store writes again; publishing resumes")
		}
		return false
	}
	if st.set(cause) {
		c.log.Error("the event log's store cannot write; holding events until it can", "cause", cause)
	}
	errs.set(errors.New(cause))
	return true
}

// storeFault is an embedded server's store fault, "" when it writes.
func storeFault(s *server.Server) string {
	if !s.JetStreamEnabled() {
		return "store unavailable: jetstream is disabled"
	}
	h := s.Healthz(&server.HealthzOptions{})
	if h == nil || h.Error == "" {
		return ""
	}
	if cause := storeFullCause(errors.New(h.Error)); cause != "" {
		return cause
	}
	if strings.Contains(h.Error, "write error") {
		return "store write error: " + h.Error
	}
	return "" // not a store fault (recovering, say)
}

// restartJetStream shuts JetStream down and enables it again with the
// configuration it ran with, then waits until the events stream answers
// on a new session.
//
// The server's JetStream API must see no request while it is enabled
// again (nats-server sets up its API queues unguarded then), so the
// client connection is closed first and its replacement (redial.go) dials
// only once the restart is done; the consumers are re-created on the new
// session as after any replaced connection.
func (c *conn) restartJetStream() error {
	cfg := c.jsConfig
	if cfg == nil {
		return errors.New("no jetstream configuration recorded")
	}
	old := c.cur()
	err := c.restartQuiet(cfg, old.nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), redialTimeout)
	defer cancel()
	for c.cur() == old {
		if c.closing.Load() {
			return errors.New("the log is closing")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reopen the connection after the restart: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if _, err := c.cur().events.Info(ctx); err != nil {
		return fmt.Errorf("open stream %s: %w", EventsStream, err)
	}
	return nil
}

// restartQuiet closes nc, waits (briefly) for the server to drop it, and
// restarts JetStream while no new session can dial.
func (c *conn) restartQuiet(cfg *server.JetStreamConfig, nc *nats.Conn) error {
	c.restarting.Lock()
	defer c.restarting.Unlock()
	before := c.srv.NumClients()
	if nc != nil {
		nc.Close()
		for i := 0; i < 100 && c.srv.NumClients() >= before; i++ {
			time.Sleep(time.Millisecond)
		}
	}
	if c.srv.JetStreamEnabled() {
		if err := c.srv.ShutdownJetStream(); err != nil {
			return fmt.Errorf("shut jetstream down: %w", err)
		}
	}
	again := *cfg
	if err := c.srv.EnableJetStream(&again); err != nil {
		return fmt.Errorf("enable jetstream: %w", err)
	}
	return nil
}

// recordJetStream keeps the running JetStream's configuration for a
// restart, with the store directory as the server was given it (the
// server adds "jetstream" to it).
func (c *conn) recordJetStream(dir string) {
	if c.srv == nil {
		return
	}
	if cfg := c.srv.JetStreamConfig(); cfg != nil {
		cfg.StoreDir = dir
		c.jsConfig = cfg
	}
}

// freeBytes is the space available to an unprivileged writer on dir's
// filesystem.
func freeBytes(dir string) (uint64, error) {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		return 0, err
	}
	return fs.Bavail * uint64(fs.Bsize), nil //nolint:gosec // block size is positive
}

// errStoreFaulted fails a control publish at once while the embedded
// store cannot write.
var errStoreFaulted = errors.New("the event log's store cannot write")
