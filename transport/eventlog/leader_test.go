package eventlog

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/airouter/airouter/internal/testkit"
)

// A stream the log cannot use is a real error, not an election: Open
// fails with it on the first try instead of retrying until leaderWait.
func TestOpenFailsAtOnceOnAStreamItCannotUse(t *testing.T) {
	ns := testkit.StartNATS(t)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: EventsStream, Subjects: []string{"other.>"}}); err != nil {
		t.Fatal(err)
	}
	var logs testkit.Buffer
	l, err := Open(ctx, Options{NatsURL: ns.URL(), MaxBytes: 64 << 20,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	if err == nil {
		_ = l.Close(context.Background())
		t.Fatal("Open succeeded on a stream with other subjects")
	}
	if !strings.Contains(err.Error(), `has subjects [other.>], not "`+EventsSubjects+`"`) {
		t.Fatalf("Open: %v", err)
	}
	if strings.Contains(logs.String(), "waiting for the stream to be ready") {
		t.Fatalf("a real error was retried as an election:\n%s", logs.String())
	}
}

// While a stream answers nothing, the wait ends at ctx's deadline with an
// error naming the operation and the last try's error; a non-election
// error ends it at once.
func TestWhileElectingIsBounded(t *testing.T) {
	c := &conn{log: testkit.Logger(t, hclog.Warn), external: true}
	ctx, cancel := context.WithTimeout(testkit.Context(t), 300*time.Millisecond)
	defer cancel()
	tries := 0
	err := c.whileElecting(ctx, "read stream X", func(ctx context.Context) error {
		tries++
		<-ctx.Done() // an unanswered request: the try's own timeout
		return ctx.Err()
	})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "read stream X: no answer after") || tries < 1 {
		t.Fatalf("after %d tries: %v", tries, err)
	}

	denied := errors.New("permissions violation")
	tries = 0
	err = c.whileElecting(testkit.Context(t), "read stream X", func(context.Context) error { tries++; return denied })
	if !errors.Is(err, denied) || tries != 1 {
		t.Fatalf("after %d tries: %v", tries, err)
	}
}
