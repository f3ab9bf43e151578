package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// -both ends with one table of the rows, pinned beside unpinned:
// each cell airouter's ratio to the bare proxy with both figures, added
// latencies as what each adds to the direct run, and a saturated target
// named with its run.
func TestBothTable(t *testing.T) {
	run := func(cpuUs, p99, p999, first50, first99 float64, n int64) measure {
		return measure{load: loadResult{Requests: n, Seconds: 1, P50: p99 / 2, P99: p99, P999: p999,
			FirstP50: first50, FirstP99: first99}, cpu: float64(n) * cpuUs * 1e-6}
	}
	result := func(says string, scale float64, rate5000 int64) runResult {
		return runResult{says: says, floor: "bare ReverseProxy", idle: "idle CPUs: cpuidle driver test", rss: [3]float64{10, 20, 70}, scs: []scenario{
			{mode: "closed", runs: [3]measure{run(50, 1000, 2000, 0, 0, 1000), run(100*scale, 0, 0, 0, 0, 1000), run(80*scale, 0, 0, 0, 0, 1000)}},
			{mode: "stream", runs: [3]measure{run(50, 30000, 31000, 2000, 3000, 100), run(400, 0, 0, 4000, 7000, 100), run(400, 0, 0, 4000, 5000, 110)}},
			{mode: "stream-rate", rate: 500, runs: [3]measure{run(50, 22000, 23000, 400, 900, 500), run(300, 0, 0, 600, 1900, 500), run(330, 0, 0, 700, 1400, 500)}},
			{mode: "rate", rate: 2000, runs: [3]measure{run(50, 1000, 2000, 0, 0, 2000), run(100, 3000, 6000, 0, 0, 2000), run(90, 5000, 6000, 0, 0, 2000)}},
			{mode: "rate", rate: 5000, runs: [3]measure{run(50, 1000, 2000, 0, 0, 5000), run(100, 3000, 6000, 0, 0, rate5000), run(90, 2000, 3000, 0, 0, 5000)}},
		}}
	}
	pinned := result("pinned", 1, 5000)
	closed := &pinned.scs[0].runs
	closed[1].reads, closed[1].writes = 5000, 4000 // 5 and 4 a request
	closed[2].reads, closed[2].writes = 5000, 2000
	var b bytes.Buffer
	writeBoth(&b, pinned, result("unpinned", 2, 4000))
	for _, want := range []string{
		"airouter / bare ReverseProxy, pinned (pinned) and unpinned (unpinned); idle CPUs: cpuidle driver test:",
		"| scenario | pinned | unpinned |",
		"| closed loop, CPU per request | 0.80x (80.0 µs / 100.0 µs) | 0.80x (160.0 µs / 200.0 µs) |",
		"| closed loop, read / write syscalls per request | 1.00x / 0.50x (5.00 / 2.00 against 5.00 / 4.00) |",
		"| SSE streams back to back, streams/s | 1.10x (110 / 100) |",
		"| SSE streams, CPU per stream | 1.00x (400.0 µs / 400.0 µs) |",
		"| SSE streams, added first byte p50 / p99 | 1.00x / 0.50x (2.00 ms / 2.00 ms against 2.00 ms / 4.00 ms) |",
		"| SSE streams at 500/s, CPU per stream | 1.10x (330.0 µs / 300.0 µs) |",
		"| SSE streams at 500/s, added first byte p50 / p99 | 1.50x / 0.50x (0.30 ms / 0.50 ms against 0.20 ms / 1.00 ms) |",
		"| fixed 2000 req/s, added p99 / p99.9 | 2.00x / 1.00x (4.00 ms / 4.00 ms against 2.00 ms / 4.00 ms) |",
		"| fixed 5000 req/s, CPU per request | 0.90x (90.0 µs / 100.0 µs) |",
		"| peak RSS (VmHWM) | 3.50x (70.0 MB / 20.0 MB) |",
		"unpinned: bare saturated at 5000 req/s (4000 req/s)",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "\npinned: bare saturated") {
		t.Errorf("the pinned run kept its rate, yet is called saturated:\n%s", b.String())
	}
}

func TestBothIsNotPin(t *testing.T) {
	err := checkOptions(options{both: true, pin: true, duration: time.Second, conns: 64, rounds: 1})
	if err == nil || !strings.Contains(err.Error(), "-both") || !strings.Contains(err.Error(), "-pin") {
		t.Errorf("checkOptions(-both -pin) = %v, want an error naming both flags", err)
	}
}
