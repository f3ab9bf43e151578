package eventlog

import (
	"slices"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/airouter/airouter/internal/testkit"
)

// The embedded server's accounts cache no subject matches: every
// acknowledged publish has a reply subject of its own, and a cache of
// them would be memory the collector marks in every cycle. 8 messages,
// each acked and delivered to a consumer, leave the account caches empty
// (with the cache they hold dozens of entries).
func TestEmbeddedServerKeepsNoMatchCache(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	publishOutcomesOneByOne(t, l, 0, 8)
	if got := len(readAll(t, l)); got != 8 {
		t.Fatalf("read %d events back, want 8", got)
	}
	sz, err := l.conn.srv.Subsz(&server.SubszOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sz.NumCache != 0 {
		t.Errorf("the embedded server's accounts cache %d subject matches, want none", sz.NumCache)
	}
}

// The embedded server remembers only the last embeddedClosedConns closed
// connections, where its default keeps 10,000 pointers no endpoint here
// reads. It records a closed connection on a goroutine of its own, so the
// count is read once the last one is among them.
func TestEmbeddedServerKeepsFewClosedConnections(t *testing.T) {
	l := openTest(t, Options{StoreDir: t.TempDir()})
	var last uint64
	for range 3 * embeddedClosedConns {
		nc, err := nats.Connect("", nats.InProcessServer(l.conn.srv))
		if err != nil {
			t.Fatal(err)
		}
		if last, err = nc.GetClientID(); err != nil {
			t.Fatal(err)
		}
		nc.Close()
	}
	closed := func() *server.Connz {
		cz, err := l.conn.srv.Connz(&server.ConnzOptions{State: server.ConnClosed, Limit: 1024})
		if err != nil {
			t.Fatal(err)
		}
		return cz
	}
	testkit.Eventually(t, "the last connection among the closed ones", func() bool {
		return slices.ContainsFunc(closed().Conns, func(c *server.ConnInfo) bool { return c.Cid == last })
	})
	if got := closed().Total; got != embeddedClosedConns {
		t.Errorf("the embedded server remembers %d closed connections, want %d (the last %d of %d)",
			got, embeddedClosedConns, embeddedClosedConns, 3*embeddedClosedConns)
	}
}
