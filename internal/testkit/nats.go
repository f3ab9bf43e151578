package testkit

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS is one stand-alone nats-server with JetStream on 127.0.0.1, playing
// an external cluster that can go away and come back on the same port and
// store.
type NATS struct {
	t    testing.TB
	dir  string
	port int // -1 until the first start picked one
	srv  *server.Server
}

// StartNATS starts a server on a free port and stops it when the test
// ends.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	n := &NATS{t: t, dir: t.TempDir(), port: -1}
	n.Start()
	n.port = n.srv.Addr().(*net.TCPAddr).Port
	t.Cleanup(n.Stop)
	return n
}

// URL is where clients reach the server.
func (n *NATS) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.port) }

// Server is the running server (nil while stopped).
func (n *NATS) Server() *server.Server { return n.srv }

// Start starts the server again on its port and store.
func (n *NATS) Start() {
	n.t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: n.port, NoSigs: true, NoLog: true,
		JetStream: true, StoreDir: n.dir, JetStreamMaxStore: 4 << 30, // room for a router's default 1 GiB stream and its checkpoints
		DisableJetStreamBanner: true,
	})
	if err != nil {
		n.t.Fatal(err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		n.t.Fatal("nats-server did not start")
	}
	n.srv = s
}

// Stop shuts the server down and waits until it has.
func (n *NATS) Stop() {
	if n.srv != nil {
		n.srv.Shutdown()
		n.srv.WaitForShutdown()
		n.srv = nil
	}
}
