package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// The sign test's two-sided p against the binomial tails worked by hand.
func TestSignTest(t *testing.T) {
	for _, c := range []struct {
		k, n int
		want float64
	}{
		{0, 10, 2.0 / 1024},  // both tails of 0 or 10
		{10, 10, 2.0 / 1024}, // the same split the other way
		{5, 10, 1},           // even: twice a tail past 1, capped
		{12, 15, 2.0 * (455 + 105 + 15 + 1) / 32768}, // 12 or more of 15
		{0, 0, 1}, // no round decided
		{1, 1, 1},
	} {
		if got := signTest(c.k, c.n); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("signTest(%d, %d) = %v, want %v", c.k, c.n, got, c.want)
		}
	}
}

// The two proxies take turns going first, direct always before them.
func TestRoundOrderAlternates(t *testing.T) {
	if got := roundOrder(0); got != [3]int{0, 1, 2} {
		t.Errorf("round 0: %v", got)
	}
	if got := roundOrder(1); got != [3]int{0, 2, 1} {
		t.Errorf("round 1: %v", got)
	}
	if roundOrder(2) != roundOrder(0) {
		t.Errorf("round 2 is not ordered as round 0")
	}
}

// Round by round, a figure counts the rounds each proxy came out lower
// (a tie is neither, a round without answers is left out), and a CPU
// figure's median ratio is of the rounds' own ratios, not of the medians.
func TestPairRounds(t *testing.T) {
	run := func(cpuUs, p99 float64, n int64) measure {
		return measure{load: loadResult{Requests: n, Seconds: 1, P99: p99}, cpu: float64(n) * cpuUs * 1e-6}
	}
	// The machine slows down over the rounds: the medians of each proxy
	// would compare 200 with 180, while airouter is lower in four of the
	// five rounds, by a tenth each.
	bare := []measure{run(100, 5, 1000), run(200, 5, 1000), run(300, 5, 1000), run(400, 9, 1000), run(100, 5, 0)}
	air := []measure{run(90, 4, 1000), run(180, 6, 1000), run(270, 5, 1000), run(360, 8, 1000), run(1, 1, 1000)}
	cpu := pairRounds(bare, air, figure{name: "cpu", of: func(m measure) float64 { return m.cpuPer() }, ratioed: true})
	if cpu.lower != 4 || cpu.higher != 0 || math.Abs(cpu.ratio-0.9) > 1e-9 || math.Abs(cpu.p-0.125) > 1e-12 {
		t.Errorf("cpu: %+v, want lower 4, higher 0, ratio 0.90, p 0.125", cpu)
	}
	lat := pairRounds(bare, air, figure{name: "p99", of: func(m measure) float64 { return m.load.P99 }})
	if lat.lower != 3 || lat.higher != 1 || !math.IsNaN(lat.ratio) {
		t.Errorf("p99: %+v, want lower 3 (the fifth round too: a latency needs no request count), higher 1, no ratio", lat)
	}
	if got, want := cpu.String(), "lower in 4 of 4 rounds, median ratio 0.90x, p 0.125"; got != want {
		t.Errorf("cell %q, want %q", got, want)
	}
}

// With more than one round the run ends with the round-by-round table,
// one row per figure; with one round there is nothing to pair.
func TestRoundsTable(t *testing.T) {
	run := func(cpuUs float64) measure {
		return measure{load: loadResult{Requests: 100, Seconds: 1, P99: cpuUs, P999: cpuUs, FirstP50: cpuUs, FirstP99: cpuUs}, cpu: 100 * cpuUs * 1e-6}
	}
	rounds := func(bare, air []float64) (out [3][]measure) {
		for i := range bare {
			out[0] = append(out[0], run(1))
			out[1] = append(out[1], run(bare[i]))
			out[2] = append(out[2], run(air[i]))
		}
		return out
	}
	r := runResult{scs: []scenario{
		{mode: "closed", rounds: rounds([]float64{100, 100, 100}, []float64{80, 90, 120})},
		{mode: "stream", rounds: rounds([]float64{400, 400, 400}, []float64{300, 300, 300})},
		{mode: "stream-rate", rate: 500, rounds: rounds([]float64{400, 400, 400}, []float64{390, 410, 380})},
		{mode: "rate", rate: 2000, rounds: rounds([]float64{50, 50, 50}, []float64{60, 60, 40})},
	}}
	var b bytes.Buffer
	writeRounds(&b, []runResult{r, r}, []string{"pinned", "unpinned"})
	for _, want := range []string{
		"| figure | pinned | unpinned |",
		"| closed loop, CPU per request | lower in 2 of 3 rounds, median ratio 0.90x, p 1.000 | lower in 2 of 3 rounds",
		"| SSE streams, first byte p99 | lower in 3 of 3 rounds, p 0.250 |",
		"| fixed 2000 req/s, p99.9 | lower in 1 of 3 rounds, p 1.000 |",
		"| SSE streams at 500/s, CPU per stream | lower in 2 of 3 rounds, median ratio 0.97x, p 1.000 |",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// Back to back, the streams each proxy got through a second, counted
	// as the rounds airouter's were higher (more is better), with the
	// median of the rounds' ratios (1.10, 1.10, 1.05).
	streams := func(n int64) measure {
		return measure{load: loadResult{Requests: n, Seconds: 2}, cpu: float64(n) * 300e-6}
	}
	b2b := runResult{scs: []scenario{{mode: "stream", rounds: [3][]measure{
		{streams(9000), streams(9000), streams(9000)},
		{streams(4000), streams(4200), streams(4000)},
		{streams(4400), streams(4620), streams(4200)},
	}}}}
	b.Reset()
	writeRounds(&b, []runResult{b2b, b2b}, []string{"pinned", "unpinned"})
	if want := "| SSE streams back to back, streams/s | higher in 3 of 3 rounds, median ratio 1.10x, p 0.250 |"; !strings.Contains(b.String(), want) {
		t.Errorf("table lacks %q:\n%s", want, b.String())
	}
	one := runResult{scs: []scenario{{mode: "closed", rounds: rounds([]float64{100}, []float64{80})}}}
	b.Reset()
	writeRounds(&b, []runResult{one}, []string{"this run"})
	if b.Len() != 0 {
		t.Errorf("one round gave a round-by-round table:\n%s", b.String())
	}
}
