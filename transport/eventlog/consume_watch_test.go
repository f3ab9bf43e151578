package eventlog

import (
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

// onlyConsumer returns the log's one running consumer.
func onlyConsumer(t *testing.T, l *Log) *consumer {
	t.Helper()
	l.cons.mu.Lock()
	defer l.cons.mu.Unlock()
	if len(l.cons.running) != 1 {
		t.Fatalf("%d consumers, want 1", len(l.cons.running))
	}
	for c := range l.cons.running {
		return c
	}
	return nil
}

// A consumption that dies under a consumer (as when the cluster node that
// held it leaves and the client's own re-creation waits out a timeout) is
// replaced from where it stopped: fn sees every event once, in order.
func TestAStalledConsumerIsReplacedWhereItStopped(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	publishAndFlush(t, l, 0, 3)
	ch := make(chan domain.Event, 100)
	stop, err := l.Consume(testkit.Context(t), 0, func(ev domain.Event, _ uint64) { ch <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	waitEvents(t, ch, 3)

	c := onlyConsumer(t, l)
	c.ccMu.Lock()
	dead := c.cc
	c.ccMu.Unlock()
	dead.Stop()
	publishAndFlush(t, l, 3, 8)
	for range stallTicks + 1 { // the first check records where it stands
		l.cons.watch()
	}
	got := waitEvents(t, ch, 5)
	for i, ev := range got {
		if ev.Seq != uint64(4+i) {
			t.Fatalf("after the replacement, event %d has seq %d, want %d", i, ev.Seq, 4+i)
		}
	}
	publishAndFlush(t, l, 8, 9)
	if ev := waitEvents(t, ch, 1)[0]; ev.Seq != 9 {
		t.Fatalf("next event has seq %d, want 9", ev.Seq)
	}
	select {
	case ev := <-ch:
		t.Fatalf("event %d delivered twice", ev.Seq)
	default:
	}
}

// A consumer that is caught up, or that started past the end of the log
// (a router restored from a checkpoint at the last event), is never
// replaced however long the log stays quiet.
func TestAQuietConsumerIsNotReplaced(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	publishAndFlush(t, l, 0, 3)
	stop, err := l.Consume(testkit.Context(t), 4, func(domain.Event, uint64) {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	c := onlyConsumer(t, l)
	c.ccMu.Lock()
	first := c.cc
	c.ccMu.Unlock()
	for range 3 * stallTicks {
		l.cons.watch()
	}
	c.ccMu.Lock()
	same := c.cc == first
	c.ccMu.Unlock()
	if !same || c.restarting.Load() {
		t.Fatal("a consumer at the end of the log was replaced")
	}
}
