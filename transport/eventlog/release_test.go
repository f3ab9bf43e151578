package eventlog

import (
	"context"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// consumersOn is how many consumers the server holds on the events stream.
func consumersOn(t *testing.T, l *Log) int {
	t.Helper()
	info, err := l.conn.cur().events.Info(testkit.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// Every way of reading the log deletes its consumer on the server once it
// is done, rather than leaving it for the server's five-minute inactivity
// limit: reads (views of the past, replay, export), lookups of a moment,
// and stopped follows and consumptions leave no consumer behind, however
// many there were. With the consumers left behind, a stream fills its
// consumer limit after a few thousand views.
func TestReadsLeaveNoConsumerBehind(t *testing.T) {
	l := openTest(t, Options{Storage: StorageMemory})
	ctx := testkit.Context(t)
	publishBans(t, l, 1)
	between := time.Now()
	publishBans(t, l, 3)
	if n := consumersOn(t, l); n != 0 {
		t.Fatalf("%d consumers before any read", n)
	}
	for i := range 50 {
		read := 0
		if err := l.Read(ctx, 1, 0, func(domain.Event, uint64) error { read++; return nil }); err != nil || read != 3 {
			t.Fatalf("read %d: %d events, %v", i, read, err)
		}
		if seq, err := l.SeqAt(ctx, between); err != nil || seq < 2 {
			t.Fatalf("SeqAt %d: %d, %v", i, seq, err)
		}
	}
	// The server may count a consumer for a moment after its deletion
	// was answered (seen under load); what matters is that none waits
	// for the inactivity limit.
	testkit.Eventually(t, "50 reads and 50 lookups to leave no consumer behind", func() bool { return consumersOn(t, l) == 0 })

	seen := make(chan domain.Event, 8)
	deliver := func(ev domain.Event, _ uint64) { seen <- ev }
	stopConsume, err := l.Consume(ctx, 0, deliver)
	if err != nil {
		t.Fatal(err)
	}
	stopFollow, err := l.Follow(ctx, nil, deliver)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Receive(t, "the consumption to deliver", seen)
	if n := consumersOn(t, l); n != 2 {
		t.Fatalf("%d consumers while a consumption and a follow run, want 2", n)
	}
	stopConsume()
	stopFollow()
	testkit.Eventually(t, "the stopped consumption and follow to leave no consumer", func() bool { return consumersOn(t, l) == 0 })

	// One stopped by its context's end goes too.
	cctx, cancel := context.WithCancel(ctx)
	if _, err := l.Follow(cctx, nil, deliver); err != nil {
		t.Fatal(err)
	}
	cancel()
	testkit.Eventually(t, "the follow ended by its context to leave no consumer", func() bool { return consumersOn(t, l) == 0 })
}
