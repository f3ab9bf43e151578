package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// The generator's four modes against the fake upstream through the bare
// proxy: every request answers, a stream's first byte comes before its
// end, which is at least its 19 chunk gaps later, and the open loop keeps
// its rate. A smoke test: the benchmark itself is `go run ./cmd/airbench`.
func TestLoadModesSmoke(t *testing.T) {
	up := httptest.NewServer(upstreamHandler())
	defer up.Close()
	for _, relay := range []bool{false, true} {
		t.Run(fmt.Sprintf("relay=%v", relay), func(t *testing.T) {
			h, err := bareProxy(up.URL, relay)
			if err != nil {
				t.Fatal(err)
			}
			bare := httptest.NewServer(h)
			defer bare.Close()
			loadModes(t, bare.URL)
		})
	}
}

// loadModes runs the generator's four modes against url.
func loadModes(t *testing.T, url string) {
	t.Helper()
	for _, c := range []loadCmd{
		{Mode: "closed", URL: url, Conns: 2, Seconds: 0.1},
		{Mode: "stream", URL: url, Conns: 2, Seconds: 0.1},
		{Mode: "rate", URL: url, Conns: 2, Rate: 200, Seconds: 0.2},
		{Mode: "stream-rate", URL: url, Conns: 4, Rate: 100, Seconds: 0.2},
	} {
		r := runLoad(c)
		if r.Requests == 0 || r.Errors != 0 {
			t.Fatalf("%s: %d requests, %d errors", c.Mode, r.Requests, r.Errors)
		}
		if r.FirstP50 > r.P50 || r.P50 > r.P99 || r.P99 > r.P999 {
			t.Errorf("%s: first byte p50 %v, p50 %v, p99 %v, p99.9 %v µs out of order", c.Mode, r.FirstP50, r.P50, r.P99, r.P999)
		}
		switch c.Mode {
		case "stream", "stream-rate":
			if gap := (r.P50 - r.FirstP50) * float64(time.Microsecond); gap < float64((streamChunks-1)*chunkGap) {
				t.Errorf("%s: %v µs from first byte to end, want at least %v", c.Mode, r.P50-r.FirstP50, (streamChunks-1)*chunkGap)
			}
		}
		if c.Rate > 0 {
			if want := int64(float64(c.Rate) * c.Seconds); r.Requests != want {
				t.Errorf("%s: %d requests in %v s at %d/s, want %d", c.Mode, r.Requests, c.Seconds, c.Rate, want)
			}
		}
	}
	// A JSON answer is the fake completion, not a stream.
	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"gpt-4o"}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("JSON answer has Content-Type %q", ct)
	}
}

// The table has a row for each scenario and rates added latency against
// the bare proxy's; a bare proxy adding nothing measurable has no ratio.
func TestTable(t *testing.T) {
	run := func(p50, p99, first float64, n int64) measure {
		return measure{load: loadResult{Requests: n, Seconds: 1, P50: p50, P99: p99, P999: p99, FirstP50: first, FirstP99: first}, cpu: float64(n) * 100e-6}
	}
	scs := []scenario{
		{mode: "closed", runs: [3]measure{run(1000, 2000, 500, 1000), run(1500, 3000, 700, 800), run(1600, 4000, 800, 800)}},
		{mode: "stream-rate", rate: 500, runs: [3]measure{run(21000, 22000, 400, 500), run(22000, 24000, 600, 500), run(22000, 23000, 500, 500)}},
		{mode: "stream", runs: [3]measure{run(21000, 22000, 400, 3000), run(30000, 33000, 2400, 2000), run(29000, 31000, 2800, 2100)}},
		{mode: "rate", rate: 2000, runs: [3]measure{run(1000, 2000, 500, 2000), run(1000, 3000, 700, 2000), run(1200, 5000, 900, 2000)}},
	}
	var b bytes.Buffer
	writeTable(&b, "bare net/http relay", scs, [3]float64{10, 18, 70}, 15)
	for _, want := range []string{
		"| scenario | direct | bare net/http relay | airouter | ratio |",
		"| closed loop, CPU per request | - | 100.0 µs | 100.0 µs | 1.00x |",
		"| fixed 2000 req/s, p99 (added) | 2.00 ms | 1.00 ms | 3.00 ms | 3.00x |",
		"| SSE streams at 500/s, achieved streams/s | 500 | 500 | 500 | 1.00x |",
		"| SSE streams back to back, streams/s | 3000 | 2000 | 2100 | 1.05x |",
		"| SSE streams, first byte p50 (added) | 0.40 ms | 2.00 ms | 2.40 ms | 1.20x |",
		"| SSE streams at 500/s, CPU per stream | - | 100.0 µs | 100.0 µs | 1.00x |",
		"| SSE streams at 500/s, first byte p50 (added) | 0.40 ms | 0.20 ms | 0.10 ms | 0.50x |",
		"| fixed 2000 req/s, p50 (added) | 1.00 ms | 0.00 ms | 0.20 ms | - |",
		"| peak RSS (VmHWM; direct: the upstream) | 10.0 MB | 18.0 MB | 70.0 MB | 3.89x |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

func TestOptions(t *testing.T) {
	if _, err := parseRates("2000,x"); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("parseRates(2000,x) = %v, want an error naming x", err)
	}
	if rs, err := parseRates("2000, 5000"); err != nil || len(rs) != 2 || rs[1] != 5000 {
		t.Errorf("parseRates = %v, %v", rs, err)
	}
	if err := checkOptions(options{duration: time.Millisecond, conns: 64, rounds: 1}); err == nil || !strings.Contains(err.Error(), "-duration") {
		t.Errorf("checkOptions(1ms) = %v", err)
	}
	if err := checkOptions(options{duration: time.Second, conns: 64, rounds: 1, streamRate: -1}); err == nil || !strings.Contains(err.Error(), "-stream-rate") {
		t.Errorf("checkOptions(-stream-rate -1) = %v", err)
	}
	// 64 connections start at most 25 streams of 20 ms a second each.
	if err := checkOptions(options{duration: time.Second, conns: 64, rounds: 1, streamRate: 1601}); err == nil || !strings.Contains(err.Error(), "0..1600") {
		t.Errorf("checkOptions(-stream-rate 1601 -conns 64) = %v, want an error naming 0..1600", err)
	}
	if err := checkOptions(options{duration: time.Second, conns: 64, rounds: 1, streamRate: 1600}); err != nil {
		t.Errorf("checkOptions(-stream-rate 1600 -conns 64) = %v", err)
	}
	// Unset, it is 500, or what fewer connections can start.
	if got := defaultStreamRate(64); got != 500 {
		t.Errorf("defaultStreamRate(64) = %d, want 500", got)
	}
	if got := defaultStreamRate(8); got != 8*streamsPerConn || checkOptions(options{duration: time.Second, conns: 8, rounds: 1, streamRate: got}) != nil {
		t.Errorf("defaultStreamRate(8) = %d, want %d and accepted", got, 8*streamsPerConn)
	}
	if err := checkOptions(options{duration: time.Second, conns: 64, rounds: 1, trace: 2 * time.Minute}); err == nil || !strings.Contains(err.Error(), "-trace") {
		t.Errorf("checkOptions(-trace 2m) = %v", err)
	}
	// -apart places the upstream of a pinned run; alone it would do nothing.
	if err := checkOptions(options{apart: true, duration: time.Second, conns: 64, rounds: 1}); err == nil || !strings.Contains(err.Error(), "-apart") {
		t.Errorf("checkOptions(-apart) = %v, want an error naming -apart", err)
	}
	for _, o := range []options{{apart: true, pin: true}, {apart: true, both: true}} {
		o.duration, o.conns, o.rounds = time.Second, 64, 1
		if err := checkOptions(o); err != nil {
			t.Errorf("checkOptions(-apart, pin %v, both %v) = %v", o.pin, o.both, err)
		}
	}
	if cmd := pinned("1", "/bin/true", "-x"); !strings.HasSuffix(cmd.Path, "taskset") || strings.Join(cmd.Args[1:], " ") != "-c 1 /bin/true -x" {
		t.Errorf("pinned = %s %v", cmd.Path, cmd.Args)
	}
}

// Pinned, the proxies have CPU 0 and the generator CPU 1, and the upstream
// shares CPU 0 with the proxies or, apart, CPU 1 with the generator; the
// line heading the table says which. Without taskset or a second CPU
// nothing is pinned, whatever was asked.
func TestLayout(t *testing.T) {
	for _, c := range []struct {
		pin, apart, taskset bool
		ncpu                int
		proxy, up, gen      string
		says                string
	}{
		{true, false, true, 2, "0", "0", "1", "proxies and upstream on CPU 0"},
		{true, true, true, 2, "0", "1", "1", "upstream and load generator on CPU 1"},
		{true, true, true, 8, "0", "1", "1", "proxies on CPU 0 without the upstream"},
		{false, true, true, 2, "", "", "", "unpinned: every process may use all 2 CPUs"},
		{true, true, false, 2, "", "", "", "taskset is not installed"},
		{true, true, true, 1, "", "", "", "this machine has one"},
	} {
		l := layoutFor(c.pin, c.apart, c.taskset, c.ncpu)
		if l.proxy != c.proxy || l.upstream != c.up || l.gen != c.gen || !strings.Contains(l.says, c.says) {
			t.Errorf("layoutFor(pin %v, apart %v, taskset %v, %d CPUs) = %+v, want proxy %q, upstream %q, gen %q, saying %q",
				c.pin, c.apart, c.taskset, c.ncpu, l, c.proxy, c.up, c.gen, c.says)
		}
	}
}

// -rounds keeps each figure's median across the rounds, CPU per request
// included, and every round's errors.
func TestMedianOfRounds(t *testing.T) {
	ms := []measure{
		{load: loadResult{Requests: 1000, Seconds: 1, P99: 9000, Errors: 1}, cpu: 0.3},
		{load: loadResult{Requests: 3000, Seconds: 1, P99: 1000}, cpu: 0.3},
		{load: loadResult{Requests: 2000, Seconds: 2, P99: 2000, Errors: 2}, cpu: 0.2},
	}
	m := medianOf(ms)
	if m.load.rps() != 1000 || m.load.P99 != 2000 || m.load.Errors != 3 || m.cpuPer() != 100 {
		t.Errorf("median: %.0f req/s, p99 %v, %d errors, %v µs CPU per request; want 1000, 2000, 3, 100",
			m.load.rps(), m.load.P99, m.load.Errors, m.cpuPer())
	}
}

// -floor picks the floor, -floor-godebug its GODEBUG alone: both reach
// the floor's role (its arguments, its environment) and its column's name,
// and bad values are rejected with the flag named.
func TestFloor(t *testing.T) {
	if relay, err := parseFloor("relay"); !relay || err != nil {
		t.Errorf("parseFloor(relay) = %v, %v", relay, err)
	}
	if relay, err := parseFloor("reverseproxy"); relay || err != nil {
		t.Errorf("parseFloor(reverseproxy) = %v, %v", relay, err)
	}
	if _, err := parseFloor("nginx"); err == nil || !strings.Contains(err.Error(), `-floor "nginx"`) {
		t.Errorf("parseFloor(nginx) = %v, want an error naming -floor", err)
	}
	base := options{duration: time.Second, conns: 64, rounds: 1}
	for _, bad := range []string{"schedtrace", "gctrace=1,=2", "a=1,"} {
		o := base
		o.floorGodebug = bad
		if err := checkOptions(o); err == nil || !strings.Contains(err.Error(), "-floor-godebug") {
			t.Errorf("checkOptions(-floor-godebug %q) = %v, want an error naming the flag", bad, err)
		}
	}
	o := base
	o.floorGodebug = "schedtrace=2147483647,gctrace=1"
	if err := checkOptions(o); err != nil {
		t.Errorf("checkOptions(-floor-godebug %q) = %v", o.floorGodebug, err)
	}
	for _, c := range []struct {
		o         options
		name      string
		args, env string
	}{
		{options{}, "bare ReverseProxy", "", ""},
		{options{relay: true}, "bare net/http relay", "-relay", ""},
		{options{relay: true, trace: time.Second, floorGodebug: "schedtrace=1"}, "bare net/http relay (GODEBUG=schedtrace=1)", "-relay -traces", "GODEBUG=schedtrace=1"},
		{options{floorGodebug: "schedtrace=1"}, "bare ReverseProxy (GODEBUG=schedtrace=1)", "", "GODEBUG=schedtrace=1"},
	} {
		args, env := c.o.floorRole()
		if got := c.o.floorName(); got != c.name || strings.Join(args, " ") != c.args || strings.Join(env, " ") != c.env {
			t.Errorf("%+v: name %q, args %q, env %q; want %q, %q, %q", c.o, got, args, env, c.name, c.args, c.env)
		}
	}
	// The floor's GODEBUG goes to its process alone, beside this one's
	// environment; the other roles inherit this one's as it is.
	t.Setenv("AIRBENCH_TEST_MARK", "1")
	cmd := roleCommand("/bin/true", "", []string{"GODEBUG=schedtrace=1"}, "-role", "revproxy")
	if n := len(cmd.Env); n == 0 || cmd.Env[n-1] != "GODEBUG=schedtrace=1" || !slices.Contains(cmd.Env, "AIRBENCH_TEST_MARK=1") {
		t.Errorf("the floor's environment ends %v, want this process's and GODEBUG=schedtrace=1", cmd.Env[max(0, len(cmd.Env)-2):])
	}
	if cmd := roleCommand("/bin/true", "", nil, "-role", "gen"); cmd.Env != nil {
		t.Errorf("a role without env of its own got %d variables, want this process's inherited (nil)", len(cmd.Env))
	}
	if err := runRole("", "", false, true); err == nil || !strings.Contains(err.Error(), "-floor relay") {
		t.Errorf("-relay without -role revproxy = %v, want an error pointing at -floor relay", err)
	}
}
