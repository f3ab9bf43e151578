package eventlog

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// The embedded server caches no subject matches: every acknowledged
// publish has a reply subject of its own, and a cache of them would be
// memory the collector marks in every cycle. 64 messages, each acked and
// delivered to a consumer, leave the server's match caches empty.
func TestEmbeddedServerKeepsNoMatchCache(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	publishOutcomesOneByOne(t, l, 0, 64)
	if got := len(readAll(t, l)); got != 64 {
		t.Fatalf("read %d events back, want 64", got)
	}
	sz, err := l.conn.srv.Subsz(&server.SubszOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sz.NumCache != 0 {
		t.Errorf("the embedded server caches %d subject matches, want none", sz.NumCache)
	}
}

// The embedded server remembers only the last embeddedClosedConns closed
// connections, where its default keeps 10,000 pointers no endpoint here
// reads.
func TestEmbeddedServerKeepsFewClosedConnections(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	for range 3 * embeddedClosedConns {
		nc, err := nats.Connect("", nats.InProcessServer(l.conn.srv))
		if err != nil {
			t.Fatal(err)
		}
		nc.Close()
	}
	cz, err := l.conn.srv.Connz(&server.ConnzOptions{State: server.ConnClosed, Limit: 1024})
	if err != nil {
		t.Fatal(err)
	}
	if cz.Total != embeddedClosedConns {
		t.Errorf("the embedded server remembers %d closed connections, want %d (the last %d of %d)",
			cz.Total, embeddedClosedConns, embeddedClosedConns, 3*embeddedClosedConns)
	}
}
