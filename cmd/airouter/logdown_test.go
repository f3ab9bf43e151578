package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/airouter/airouter/internal/testkit"
)

// soloNATS is a stand-alone nats-server (testkit.NATS) that can also
// drop the router's connections.
type soloNATS struct {
	*testkit.NATS
	t *testing.T
}

func startSoloNATS(t *testing.T) *soloNATS {
	t.Helper()
	return &soloNATS{NATS: testkit.StartNATS(t), t: t}
}

// routerConns are the server's ids of the router's client connections.
func (n *soloNATS) routerConns() map[uint64]bool {
	n.t.Helper()
	cz, err := n.Server().Connz(&server.ConnzOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	ids := map[uint64]bool{}
	for _, c := range cz.Conns {
		if strings.HasPrefix(c.Name, "airouter") {
			ids[c.Cid] = true
		}
	}
	return ids
}

// disconnectRouter closes the router's client connections from the
// server's side and returns their ids.
func (n *soloNATS) disconnectRouter() map[uint64]bool {
	n.t.Helper()
	kicked := n.routerConns()
	if len(kicked) == 0 {
		n.t.Fatal("no airouter connection to kick")
	}
	for id := range kicked {
		if err := n.Server().DisconnectClientByID(id); err != nil {
			n.t.Fatal(err)
		}
	}
	return kicked
}

// servesWhileLogDown waits for r's /health to say 200 "degraded" with the
// log disconnected and a cause (what names the wait), then checks that a
// chat completion is still served and an admin ban refused with 503.
func servesWhileLogDown(t *testing.T, r *running, what string) {
	t.Helper()
	testkit.Eventually(t, what, func() bool {
		code, status, h := healthStatus(t, r)
		return code == 200 && status == "degraded" && !h.Log.Connected && h.Log.LastError != ""
	})
	if code, _, body := chat(t, r); code != 200 {
		t.Fatalf("chat while the log is down: %d %s", code, body)
	}
	code, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-a", "model": "gpt-test", "ttl": "1m"})
	if code != 503 {
		t.Fatalf("ban while the log is down: %d %s, want 503", code, body)
	}
}

// kickRouter drops the router's client connections from the server's side
// and waits until the router has connected again.
func (n *soloNATS) kickRouter() {
	n.t.Helper()
	kicked := n.disconnectRouter()
	testkit.Eventually(n.t, "the router connects again", func() bool {
		ids := n.routerConns()
		for id := range ids {
			if kicked[id] {
				return false
			}
		}
		return len(ids) > 0
	})
}

type statusDoc struct {
	Status string `json:"status"`
}

func healthStatus(t *testing.T, r *running) (int, string, healthDoc) {
	t.Helper()
	code, body, h := health(t, r)
	var s statusDoc
	if err := json.Unmarshal(body, &s); err != nil {
		t.Fatal(err)
	}
	return code, s.Status, h
}

// While the log is down, /health answers 200 "degraded" with
// log.connected false and the cause; the router keeps routing, refuses
// admin changes, and once the log is back (after an outage, or after its
// connection was dropped) /health is "healthy" and admin changes work.
func TestHealthIsDegradedWhileTheLogIsDown(t *testing.T) {
	ns := startSoloNATS(t)
	upA, upB := newUpstream(t, 200), newUpstream(t, 200)
	r := start(t, buildConfig(t, "events:\n  nats_url: "+ns.URL()+"\n", "", upA, upB))
	if code, status, h := healthStatus(t, r); code != 200 || status != "healthy" || !h.Log.Connected {
		t.Fatalf("/health before: %d %q connected %v", code, status, h.Log.Connected)
	}
	ban := func() int {
		code, _, _ := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-a", "model": "gpt-test", "ttl": "1m"})
		return code
	}

	ns.Stop()
	servesWhileLogDown(t, r, "/health degraded")

	ns.Start()
	testkit.Eventually(t, "/health healthy after the outage", func() bool {
		code, status, h := healthStatus(t, r)
		return code == 200 && status == "healthy" && h.Log.Connected
	})
	if code := ban(); code != 200 {
		t.Fatalf("ban after the outage: %d", code)
	}

	ns.kickRouter()
	testkit.Eventually(t, "/health healthy after the kick", func() bool {
		code, status, h := healthStatus(t, r)
		return code == 200 && status == "healthy" && h.Log.Connected
	})
	if code := ban(); code != 200 {
		t.Fatalf("ban after the kick: %d", code)
	}
}
