package main

import (
	"strings"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
)

// dropRouter closes the router's client connections from the server's side
// and at once stops the server, so the connection the server closed stays
// down: the reconnect the client starts finds no server.
func (n *soloNATS) dropRouter() {
	n.t.Helper()
	n.disconnectRouter()
	n.Stop()
}

// After the server closes the log's connection, and while it cannot come
// back, /health is 200 "degraded" with log.connected false and the cause,
// and admin changes are refused; once the server is back the log
// reconnects by itself, /health is "healthy" again and an admin change is
// stored.
func TestHealthIsDegradedAfterTheServerClosesTheConnection(t *testing.T) {
	ns := startSoloNATS(t)
	r := start(t, buildConfig(t, "events:\n  nats_url: "+ns.URL()+"\n", "", newUpstream(t, 200), newUpstream(t, 200)))
	ban := func() (int, []byte) {
		code, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-a", "model": "gpt-test", "ttl": "1m"})
		return code, body
	}
	testkit.Eventually(t, "/health healthy once the router serves", func() bool {
		code, status, h := healthStatus(t, r)
		return code == 200 && status == "healthy" && h.Log.Connected
	})

	ns.dropRouter()
	servesWhileLogDown(t, r, "/health degraded after the server closed the connection")
	if code, status, h := healthStatus(t, r); status != "degraded" || h.Log.Connected || !strings.Contains(strings.ToLower(h.Log.LastError), "nats") {
		t.Fatalf("/health still down: %d %q connected %v cause %q", code, status, h.Log.Connected, h.Log.LastError)
	}

	ns.Start()
	testkit.Eventually(t, "/health healthy once the server is back", func() bool {
		code, status, h := healthStatus(t, r)
		return code == 200 && status == "healthy" && h.Log.Connected
	})
	if code, body := ban(); code != 200 || !blocked(r, "cred-a", "gpt-test") {
		t.Fatalf("ban after the reconnect: %d %s, banned %v", code, body, blocked(r, "cred-a", "gpt-test"))
	}
}
