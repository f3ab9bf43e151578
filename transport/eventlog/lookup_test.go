package eventlog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airouter/airouter/internal/testkit"
)

// externalLog opens a log on a stand-alone nats-server (an external
// cluster of one) and returns it with a JetStream context of its own.
func externalLog(t *testing.T) (*Log, jetstream.JetStream) {
	t.Helper()
	ns := testkit.StartNATS(t)
	l, err := Open(testkit.Context(t), Options{NatsURL: ns.URL(), MaxBytes: 64 << 20, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return l, js
}

// A stream lookup that goes unanswered at first, as on a cluster electing
// the stream's leader, is retried: findStreams (the lookup of Reader and
// of a replacement connection) finds both streams once the server
// answers, and a stream that is not there fails at once, named.
func TestFindStreamsWaitsForAnElection(t *testing.T) {
	l, js := externalLog(t)
	unanswered := map[string]int{EventsStream: 2, CheckpointsStream: 1}
	calls := map[string]int{}
	electing := func(ctx context.Context, name string) (jetstream.Stream, error) {
		calls[name]++
		if calls[name] <= unanswered[name] {
			return nil, nats.ErrNoResponders // what a stream without a leader answers
		}
		return js.Stream(ctx, name)
	}
	events, ckpts, err := l.conn.findStreams(testkit.Context(t), electing, " in test")
	if err != nil {
		t.Fatalf("findStreams: %v", err)
	}
	if events == nil || events.CachedInfo().Config.Name != EventsStream || ckpts == nil || ckpts.CachedInfo().Config.Name != CheckpointsStream {
		t.Fatalf("found events %v, checkpoints %v", events, ckpts)
	}
	if calls[EventsStream] != 3 || calls[CheckpointsStream] != 2 {
		t.Fatalf("lookups %v, want each retried past its unanswered tries", calls)
	}

	clear(calls)
	missing := func(ctx context.Context, name string) (jetstream.Stream, error) {
		calls[name]++
		return js.Stream(ctx, name+"_NOT_THERE")
	}
	_, _, err = l.conn.findStreams(testkit.Context(t), missing, " in test")
	if !errors.Is(err, jetstream.ErrStreamNotFound) || !strings.Contains(err.Error(), "open stream "+EventsStream+" in test: ") || calls[EventsStream] != 1 {
		t.Fatalf("after %v lookups: %v; want one lookup and the missing stream named", calls, err)
	}
}

// A log without a checkpoints stream is read without one.
func TestFindStreamsWithoutCheckpoints(t *testing.T) {
	l, js := externalLog(t)
	noCheckpoints := func(ctx context.Context, name string) (jetstream.Stream, error) {
		if name == CheckpointsStream {
			return nil, jetstream.ErrStreamNotFound
		}
		return js.Stream(ctx, name)
	}
	events, ckpts, err := l.conn.findStreams(testkit.Context(t), noCheckpoints, "")
	if err != nil || events == nil || ckpts != nil {
		t.Fatalf("events %v, checkpoints %v, err %v", events, ckpts, err)
	}
}
