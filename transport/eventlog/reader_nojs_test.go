package eventlog

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/airouter/airouter/internal/testkit"
)

// plainNATS starts a nats-server without JetStream on 127.0.0.1 and
// returns its URL.
func plainNATS(t *testing.T) string {
	t.Helper()
	s, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Shutdown(); s.WaitForShutdown() })
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	return "nats://" + s.Addr().(*net.TCPAddr).String()
}

// A Reader on a NATS server without JetStream (a wrong URL for replay,
// export or tail) fails at once saying so, rather than waiting out a
// leader election that will never come.
func TestReaderOnANATSWithoutJetStreamFailsAtOnce(t *testing.T) {
	url := plainNATS(t)
	begin := time.Now()
	r, err := OpenReader(testkit.Context(t), ReaderOptions{NatsURL: url, Logger: testkit.Logger(t, 0)})
	took := time.Since(begin)
	if err == nil {
		_ = r.Close(testkit.Context(t))
		t.Fatal("OpenReader succeeded on a server without JetStream")
	}
	if !strings.Contains(strings.ToLower(err.Error()), "jetstream") || took > leaderWait/2 {
		t.Fatalf("after %s: %v; want a prompt error naming JetStream", took, err)
	}
}
