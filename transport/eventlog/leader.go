package eventlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A stream of several copies on a cluster answers nothing until its copies
// have elected a leader: a request to a stream just created (by this
// replica or one starting beside it) waits for its own timeout instead of
// failing. Opening the log therefore retries what such a stream leaves
// unanswered, within a bound, and fails at once on any other error.
const (
	// leaderWait bounds the wait for a stream's leader: raft's election
	// takes up to nine seconds, and a new stream of three copies first
	// needs its copies placed.
	leaderWait = 30 * time.Second
	// leaderTry bounds one request while waiting, so an unanswered one
	// is retried soon.
	leaderTry = 2 * time.Second
	// leaderBackoff is the first pause between tries; it doubles up to
	// leaderBackoffMax.
	leaderBackoff    = 50 * time.Millisecond
	leaderBackoffMax = time.Second
)

// errNoLeader is a stream's info naming no leader.
var errNoLeader = errors.New("the stream has no leader yet")

// errNotVisible is a stream just created or found that a server answers
// is not there: the cluster has not spread its assignment yet.
var errNotVisible = errors.New("the stream is not visible on every server yet")

// jsClusterNotAvailable is the JetStream API's error code for "JetStream
// system temporarily unavailable", answered while a group has no leader.
const jsClusterNotAvailable jetstream.ErrorCode = 10008

// noLeaderYet reports whether err is what a stream without a leader
// answers: nothing (the try's timeout), no responders, "temporarily
// unavailable", info without a leader, or (errNotVisible) not found right
// after it was created or found.
func noLeaderYet(err error) bool {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, errNoLeader), errors.Is(err, errNotVisible), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, jetstream.ErrNoStreamResponse):
		return true
	case errors.As(err, &apiErr):
		return apiErr.ErrorCode == jsClusterNotAvailable
	}
	return false
}

// whileElecting calls try, each time with leaderTry to answer, until it
// returns nil or an error other than noLeaderYet (returned at once),
// pausing with backoff in between, for at most leaderWait (less when ctx's
// deadline comes sooner), on an external cluster; with the embedded server
// it calls try once. what names the operation in the log line and in the
// error.
func (c *conn) whileElecting(ctx context.Context, what string, try func(context.Context) error) error {
	if !c.external {
		return try(ctx) // the embedded server is one node: no election to wait for
	}
	bound, cancel := context.WithTimeout(ctx, leaderWait)
	defer cancel()
	pause, began := leaderBackoff, time.Now()
	for tries := 1; ; tries++ {
		tctx, tcancel := context.WithTimeout(bound, leaderTry)
		err := try(tctx)
		tcancel()
		switch {
		case err == nil:
			if tries > 1 {
				c.log.Info("stream ready on the cluster", "what", what,
					"tries", tries, "waited", time.Since(began).Round(time.Millisecond).String())
			}
			return nil
		case !noLeaderYet(err): // a canceled ctx included
			return err
		case tries == 1:
			c.log.Info("waiting for the stream to be ready on the cluster (a new stream elects its leader first)", "what", what, "error", err)
		}
		select {
		case <-bound.Done():
			return fmt.Errorf("%s: no answer after %d tries in %s; the stream may have no leader (is a majority of its servers up?): %w",
				what, tries, time.Since(began).Round(time.Millisecond), err)
		case <-time.After(pause):
		}
		pause = min(2*pause, leaderBackoffMax)
	}
}

// openStream is ensureStream, then a wait until the stream has a leader,
// both retried while it is being elected. A stream ensureStream just
// created or found (possibly created by another replica that instant) that
// a server then answers is not found is not yet known cluster-wide, and is
// retried too: ensureStream creates what is truly missing.
func (c *conn) openStream(ctx context.Context, want jetstream.StreamConfig) (jetstream.Stream, error) {
	var st jetstream.Stream
	notVisible := func(err error) error {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("%w: %w", errNotVisible, err)
		}
		return err
	}
	err := c.whileElecting(ctx, "open stream "+want.Name, func(ctx context.Context) error {
		s, err := c.ensureStream(ctx, want)
		if err != nil {
			return notVisible(err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			return notVisible(fmt.Errorf("read stream %s: %w", want.Name, err))
		}
		if info.Cluster != nil && info.Cluster.Leader == "" {
			return fmt.Errorf("stream %s: %w", want.Name, errNoLeader)
		}
		st = s
		return nil
	})
	return st, err
}
