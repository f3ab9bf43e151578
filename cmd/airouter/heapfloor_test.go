package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

var gogcPercent = regexp.MustCompile(`(?m)^go_gc_gogc_percent (\S+)$`)

// serveGCPercent starts bin serve with the server lines extra and returns
// the GC percent its /metrics reports.
func serveGCPercent(t *testing.T, bin, extra string) float64 {
	t.Helper()
	p := startOneCredential(t, bin, extra, "http://127.0.0.1:1")
	st, body, err := p.send("GET", "/metrics", nil)
	if err != nil || st != 200 {
		t.Fatalf("GET /metrics: %d %v", st, err)
	}
	m := gogcPercent.FindSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no go_gc_gogc_percent:\n%s", tail(body, 2000))
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// serve paces the collector to server.heap_floor_mb: by default (16 MiB)
// and with 64 MiB, over a router's small live heap, the percent is above
// GOGC's 100, the higher the floor the higher; a floor of 0 leaves it at
// 100.
func testHeapFloor(t *testing.T, bin string) {
	def := serveGCPercent(t, bin, "")
	if def <= 100 {
		t.Errorf("by default the collector runs at %v%%, want above 100", def)
	}
	if got := serveGCPercent(t, bin, "  heap_floor_mb: 64\n"); got <= def {
		t.Errorf("with heap_floor_mb 64 the collector runs at %v%%, want above the default's %v%%", got, def)
	}
	if got := serveGCPercent(t, bin, "  heap_floor_mb: 0\n"); got != 100 {
		t.Errorf("with heap_floor_mb 0 the collector runs at %v%%, want GOGC's 100", got)
	}
}

// GOGC in the environment is the operator's pacing: the floor is not
// applied, and the log says so. A floor of 0 starts nothing either.
func TestPaceCollectorLeavesGOGCAlone(t *testing.T) {
	logs := &testkit.Buffer{}
	logger := hclog.New(&hclog.LoggerOptions{Output: logs})
	t.Setenv("GOGC", "150")
	if stop := paceCollector(config.Server{HeapFloorMB: 64}, logger); stop != nil {
		stop()
		t.Fatal("the collector was paced with GOGC set")
	}
	if want := "GOGC is set"; !strings.Contains(logs.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, logs.String())
	}
	t.Setenv("GOGC", "")
	if stop := paceCollector(config.Server{HeapFloorMB: 0}, logger); stop != nil {
		stop()
		t.Fatal("the collector was paced with heap_floor_mb 0")
	}
}
