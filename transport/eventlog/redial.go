package eventlog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The client library reconnects a lost connection by itself (MaxReconnects
// -1), but it closes a connection for good when the server answers with an
// error it does not retry (a "maximum control line exceeded", for one), and
// a closed connection never comes back. The log then replaces it: it dials
// a new connection with the same options, opens the streams on it and swaps
// the new session in; the publisher and the consumers load the session for
// each use, and the consumers are re-created on the new one from where they
// were. Events handed to the old connection and not acknowledged time out
// there and are counted as failed, like any publish of unknown fate.
const (
	// redialWait is the pause between two tries to replace a closed
	// connection; redialTimeout bounds the stream lookups of one try.
	redialWait    = 250 * time.Millisecond
	redialTimeout = 5 * time.Second
	// inProcessReconnectWait is the client's pause between reconnect
	// tries to the embedded server (the library's default is 2 s).
	inProcessReconnectWait = 100 * time.Millisecond
)

// session is one client connection with its JetStream context and the
// streams opened on it. A session is filled in while the log opens and
// never changed once it is in use; a replacement is a new session.
type session struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	events jetstream.Stream
	ckpts  jetstream.Stream // nil for a Reader of a log without checkpoints
}

// redial is the conn's part that replaces a connection the client closed.
type redial struct {
	name, url, creds string // as connect was called
	jsOpts           []jetstream.JetStreamOpt

	mu       sync.Mutex  // orders a swap against close
	closing  atomic.Bool // close or teardown began: nothing is replaced
	quit     chan struct{}
	quitOnce sync.Once
	doneOnce sync.Once
	active   atomic.Bool // a replacement is under way
	// restarting is held by a JetStream restart (store.go); a new session
	// dials only when none is under way.
	restarting sync.RWMutex
	wg         sync.WaitGroup
	// onRedial runs after a new session is in place: the consumers are
	// re-created on it. Set before the log is used.
	onRedial func()
}

// cur is the current session.
func (c *conn) cur() *session { return c.sess.Load() }

// closed is every connection's ClosedHandler. The current connection
// closed by close or teardown ends the conn; closed by the client itself,
// it is replaced.
func (c *conn) closed(nc *nats.Conn) {
	c.mu.Lock()
	if c.closing.Load() {
		c.mu.Unlock()
		if nc == c.cur().nc {
			c.doneOnce.Do(func() { close(c.ncDone) })
		}
		return
	}
	if nc != c.cur().nc || !c.active.CompareAndSwap(false, true) {
		c.mu.Unlock()
		return // an abandoned connection, or a replacement under way
	}
	c.wg.Add(1) // under mu: stopRedial's Wait comes after
	c.mu.Unlock()
	err := nc.LastError()
	if err == nil {
		err = nats.ErrConnectionClosed
	}
	c.errs.set(fmt.Errorf("nats connection closed, replacing it: %w", err))
	c.log.Warn("the nats connection was closed; opening a new one", "error", err)
	go c.replace()
}

// replace dials until a new session is in place or the conn closes.
func (c *conn) replace() {
	defer c.wg.Done()
	defer c.active.Store(false)
	for try := 1; ; try++ {
		s, err := c.newSession()
		if err == nil {
			c.mu.Lock()
			if c.closing.Load() {
				c.mu.Unlock()
				s.nc.Close()
				return
			}
			c.sess.Store(s)
			c.mu.Unlock()
			c.log.Info("opened a new nats connection", "tries", try)
			if c.onRedial != nil {
				c.onRedial()
			}
			return
		}
		c.errs.set(fmt.Errorf("replace the closed nats connection: %w", err))
		if try == 1 {
			c.log.Warn("cannot open a new nats connection yet; retrying", "error", err)
		}
		t := time.NewTimer(redialWait)
		select {
		case <-t.C:
		case <-c.quit:
			t.Stop()
			return
		}
	}
}

// newSession dials and opens the streams on the new connection.
func (c *conn) newSession() (*session, error) {
	c.restarting.RLock()
	defer c.restarting.RUnlock()
	nc, err := c.dial()
	if err != nil {
		return nil, err
	}
	s := &session{nc: nc}
	fail := func(err error) (*session, error) {
		nc.Close()
		return nil, err
	}
	if s.js, err = jetstream.New(nc, c.jsOpts...); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), redialTimeout)
	defer cancel()
	if s.events, s.ckpts, err = c.findStreams(ctx, s.js.Stream, ""); err != nil {
		return fail(err)
	}
	return s, nil
}

// stopRedial ends replacing connections and waits for a replacement under
// way to give up or finish.
func (c *conn) stopRedial() {
	c.mu.Lock()
	c.closing.Store(true)
	c.mu.Unlock()
	c.quitOnce.Do(func() { close(c.quit) })
	c.wg.Wait()
}
