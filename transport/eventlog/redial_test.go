package eventlog

import (
	"errors"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
)

// consumeInto follows the log from the start into a channel.
func consumeInto(t *testing.T, l *Log) <-chan domain.Event {
	t.Helper()
	ch := make(chan domain.Event, 64)
	stop, err := l.Consume(testkit.Context(t), 0, func(ev domain.Event, _ uint64) { ch <- ev })
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	t.Cleanup(stop)
	return ch
}

// publishAndSee publishes an outcome and a ban and waits for the consumer
// to deliver both.
func publishAndSee(t *testing.T, l *Log, ch <-chan domain.Event, i int) {
	t.Helper()
	if !l.Publish(outcomeEvent(i)) {
		t.Fatal("Publish refused an outcome")
	}
	ban := banEvent("ban-"+string(rune('a'+i)), "c", "m")
	ban.V = domain.SchemaVersion
	if _, err := l.PublishControl(testkit.Context(t), ban); err != nil {
		t.Fatalf("PublishControl: %v", err)
	}
	var sawOutcome, sawBan bool
	for _, ev := range waitEvents(t, ch, 2) {
		sawOutcome = sawOutcome || (ev.Outcome != nil && ev.Outcome.RequestID == outcomeEvent(i).Outcome.RequestID)
		sawBan = sawBan || (ev.Ban != nil && ev.ID == ban.ID)
	}
	if !sawOutcome || !sawBan {
		t.Fatalf("round %d: outcome delivered %v, ban delivered %v", i, sawOutcome, sawBan)
	}
}

// A connection the client library closes for good (here: the server's
// "maximum control line exceeded" answer to a 5,000-byte subject, which the
// client never reconnects from) is replaced by the log: queries say the log
// is unreachable meanwhile, and then publishing and consuming go on.
func TestALogReplacesAConnectionTheClientClosed(t *testing.T) {
	var logs testkit.Buffer
	l := openTest(t, Options{Storage: StorageMemory, Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	ch := consumeInto(t, l)
	publishAndSee(t, l, ch, 0)

	old := l.conn.cur().nc
	if err := old.Publish(strings.Repeat("a", 5000), nil); err != nil {
		t.Fatalf("raw publish: %v", err)
	}
	testkit.Eventually(t, "the client closes the connection", old.IsClosed)
	testkit.Eventually(t, "a new connection", func() bool { return l.conn.cur().nc != old && l.Stats().Connected })
	if !strings.Contains(grepLog(logs.String(), "opening a new one"), "maximum control line") {
		t.Errorf("no warning naming the cause:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "opened a new nats connection") {
		t.Errorf("no log line about the new connection:\n%s", logs.String())
	}
	publishAndSee(t, l, ch, 1)
}

// A connection the server drops (a kicked client) comes back by itself,
// and so does one closed twice in a row.
func TestALogReconnectsAfterItsClientIsKickedOrClosedAgain(t *testing.T) {
	l := openTest(t, Options{Storage: StorageMemory})
	ch := consumeInto(t, l)
	publishAndSee(t, l, ch, 0)

	nc := l.conn.cur().nc
	id, err := nc.GetClientID()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.conn.srv.DisconnectClientByID(id); err != nil {
		t.Fatalf("kick: %v", err)
	}
	testkit.Eventually(t, "the kicked client reconnects", func() bool {
		id2, err := nc.GetClientID()
		return err == nil && id2 != id && l.Stats().Connected
	})
	publishAndSee(t, l, ch, 1)

	for i := 2; i < 4; i++ {
		old := l.conn.cur().nc
		old.Close()
		testkit.Eventually(t, "a new connection", func() bool { return l.conn.cur().nc != old && l.Stats().Connected })
		publishAndSee(t, l, ch, i)
	}
}

// Closing the log while it replaces a connection ends the replacement and
// leaves nothing running.
func TestCloseDuringAReplacement(t *testing.T) {
	l, err := Open(testkit.Context(t), Options{Storage: StorageMemory, Logger: testkit.Logger(t, hclog.Warn)})
	if err != nil {
		t.Fatal(err)
	}
	l.conn.cur().nc.Close()
	if err := l.Close(testkit.Context(t)); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		t.Fatalf("Close: %v", err)
	}
	if nc := l.conn.cur().nc; !nc.IsClosed() {
		t.Error("a connection is still open after Close")
	}
}

// grepLog is the lines of s containing sub.
func grepLog(s, sub string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
