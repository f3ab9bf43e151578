package incident

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// replaying is a Follower that delivers a fixed list of events once the
// subscription is asked for, from its own goroutine, as a live log does.
type replaying struct {
	evs      []domain.Event
	bansOnly bool
	stopped  chan struct{}
}

func (r *replaying) Follow(_ context.Context, bansOnly bool, fn func(domain.Event, uint64)) (func(), error) {
	r.bansOnly = bansOnly
	r.stopped = make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i, ev := range r.evs {
			select {
			case <-r.stopped:
				return
			default:
			}
			fn(ev, uint64(len(r.evs)-1-i))
		}
	}()
	return func() { close(r.stopped); <-done }, nil
}

// Follow writes what the follower delivers, flushed once nothing is
// waiting, until the context ends, which is not an error.
func TestFollowWritesUntilTheContextEnds(t *testing.T) {
	var out testkit.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	f := &replaying{evs: incidentEvents()[6:7]}
	done := make(chan error, 1)
	go func() {
		done <- Follow(ctx, f, true, NewLiveTimeline(&out, Filter{}), func() {})
	}()
	testkit.Eventually(t, "Follow to write the ban", func() bool {
		if strings.Contains(out.String(), "banned (fail2ban)") {
			return true
		}
		select {
		case err := <-done:
			t.Fatalf("Follow ended early: %v", err)
		default:
		}
		return false
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Follow: %v", err)
	}
	if !f.bansOnly {
		t.Error("bansOnly was not passed on")
	}
}

// A write that fails ends the follow with its error.
func TestFollowEndsOnAWriteError(t *testing.T) {
	f := &replaying{evs: incidentEvents()[:3]}
	err := Follow(t.Context(), f, false, NewLiveTimeline(failingWriter{}, Filter{}), func() {})
	if !errors.Is(err, errWrite) {
		t.Fatalf("Follow = %v, want the write error", err)
	}
}

var errWrite = errors.New("no one reads")

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }
