package proxy

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
	"github.com/airouter/airouter/internal/bareproxy"
	"github.com/airouter/airouter/internal/testkit"
)

// The proxy benchmark runs the fake upstream and the load generator in a
// child process (this test binary, re-executed with benchChildEnv set), so
// the benchmark process holds only the proxy being measured, and its own
// CPU time (getrusage RUSAGE_SELF) over a phase is that proxy's cost. One
// phase runs at a time: direct to the upstream (the benchmark process is
// idle), through a bare httputil.ReverseProxy, through the airouter proxy
// alone, through it with the real embedded log (bench_log_test.go), and
// through the airouter binary itself (bench_process_test.go, its CPU read
// from /proc).
//
//	go test -run '^$' -bench BenchmarkProxyOverhead -benchtime 1x ./transport/proxy/

const benchChildEnv = "AIROUTER_BENCH_CHILD"

func TestMain(m *testing.M) {
	var err error
	switch os.Getenv(benchChildEnv) {
	case "":
		os.Exit(m.Run())
	case "revproxy":
		err = runReverseProxyChild(os.Getenv(benchUpstreamEnv), os.Stdin, os.Stdout)
	default:
		err = runBenchChild(os.Stdin, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serve runs h on a fresh 127.0.0.1 listener until the benchmark ends.
func serve(b *testing.B, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// benchAirouter builds the proxy as the wiring would: two credentials on
// the upstream with (never reached) rpm/tpm limits so every window is
// consulted, a gate with entries, the default failover settings (both
// timers armed), and a Record that hands each outcome to a goroutine that
// stamps and encodes it as an event, as the log publisher does (the NATS
// publish itself is not part of this process).
func benchAirouter(b *testing.B, upstreamURL string, edit ...func(*Deps)) http.Handler {
	events := make(chan domain.Outcome, 8192)
	go func() {
		for o := range events {
			_, _ = eventjson.Encode(domain.Event{Kind: domain.KindOutcomeRecorded, At: time.Now(), Outcome: &o})
		}
	}()
	b.Cleanup(func() { close(events) })
	creds := []Credential{
		{Name: "a", Type: domain.CredentialOpenAI, BaseURL: upstreamURL + "/v1", APIKey: "sk-bench-a-0123456789", RPM: 1 << 30, TPM: 1 << 30},
		{Name: "b", Type: domain.CredentialOpenAI, BaseURL: upstreamURL + "/v1", APIKey: "sk-bench-b-0123456789", RPM: 1 << 30, Weight: 2},
	}
	routes := []Route{{Model: "gpt-4o", Credential: "a", RPM: 1 << 30}, {Model: "gpt-4o", Credential: "b", UpstreamModel: "gpt-4o-2024-08-06"}}
	gate := mapGate{{Credential: "c", Model: "gpt-4o"}: {Reason: domain.BlockBanned, Permanent: true}}
	d := Deps{
		Credentials: creds, Routes: routes, MasterKey: masterKey, RequestTimeout: 60 * time.Second,
		Gate: func() Gate { return gate },
		Record: func(o domain.Outcome) {
			select {
			case events <- o:
			default:
			}
		},
	}
	for _, e := range edit {
		e(&d)
	}
	p, err := New(d)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Close)
	return p.Handler()
}

// bareReverseProxy is the floor (package bareproxy) in front of
// upstreamURL.
func bareReverseProxy(upstreamURL string) http.Handler {
	u, _ := url.Parse(upstreamURL)
	return bareproxy.New(u)
}

type phaseResult struct {
	name string
	max  loadResult
	// One entry per round at the fixed rate.
	fixed       []loadResult
	cpuPerReqUS []float64
	allocsReq   []float64
}

// median is the middle value of xs (the mean of the two middle ones for an
// even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (r phaseResult) fixedMedian(f func(loadResult) float64) float64 {
	xs := make([]float64, len(r.fixed))
	for i, x := range r.fixed {
		xs[i] = f(x)
	}
	return median(xs)
}

// ratios is x's CPU per request over base's, round by round: each round
// runs the targets back to back, so a ratio compares like with like while
// the shared machine's speed drifts between rounds.
func ratios(x, base phaseResult) []float64 {
	out := make([]float64, len(x.cpuPerReqUS))
	for i := range out {
		out[i] = x.cpuPerReqUS[i] / base.cpuPerReqUS[i]
	}
	return out
}

func BenchmarkProxyOverhead(b *testing.B) {
	if testing.Short() {
		b.Skip("takes about a minute")
	}
	const (
		conns  = 64
		rounds = 5
	)
	span, roundSpan := 4*time.Second, 3*time.Second
	child := startBenchChild(b)
	withLog, batching := benchAirouterWithLog(b, child.url)
	type target struct {
		name string
		url  string
		cpu  func() float64 // the proxy process's CPU seconds
	}
	cpuSeconds := func() float64 { return testkit.ProcessCPU().Seconds() }
	targets := []target{
		{"direct", child.url, cpuSeconds},
		{"reverseproxy", serve(b, bareReverseProxy(child.url)), cpuSeconds},
		{"airouter", serve(b, benchAirouter(b, child.url)), cpuSeconds},
		{"airouter+log", serve(b, withLog), cpuSeconds},
	}
	if runtime.GOOS == "linux" {
		// The same comparison between whole processes, each holding only
		// its proxy (and its own garbage collector's pace).
		rp := startBenchChild(b, benchChildEnv+"=revproxy", benchUpstreamEnv+"="+child.url)
		targets = append(targets, target{"revproxy-bin", rp.url, procCPU(rp.cmd.Process.Pid)})
		ab := startAirouterProcess(b, child.url)
		targets = append(targets, target{"airouter-bin", ab.url, procCPU(ab.pid)})
	}
	// Last, so the rows above keep their places: airouter with every
	// request traced and exported (benchTracer).
	traced := serve(b, benchAirouter(b, child.url, func(d *Deps) { d.Tracer = benchTracer(b) }))
	targets = append(targets, target{"airouter+trace", traced, cpuSeconds})
	results := make([]phaseResult, len(targets))
	for i, t := range targets {
		results[i].name = t.name
		results[i].max = child.load(b, t.url, conns, 0, span)
	}
	// The fixed rate is half of the slowest proxy's maximum, so every
	// proxy does the same work without saturating.
	slowest := results[1].max.rps()
	for _, r := range results[2:] {
		slowest = min(slowest, r.max.rps())
	}
	rate := int(slowest / 2)
	for range rounds {
		for i, t := range targets {
			runtime.GC()
			cpu0, obj0 := t.cpu(), heapObjects()
			r := child.load(b, t.url, conns, rate, roundSpan)
			cpu1, obj1 := t.cpu(), heapObjects()
			n := float64(r.Requests)
			allocs := float64(obj1-obj0) / n
			if strings.HasSuffix(t.name, "-bin") {
				allocs = math.NaN() // another process's heap
			}
			results[i].fixed = append(results[i].fixed, r)
			results[i].cpuPerReqUS = append(results[i].cpuPerReqUS, (cpu1-cpu0)/n*1e6)
			results[i].allocsReq = append(results[i].allocsReq, allocs)
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d keep-alive connections, GOMAXPROCS=%d; max rate for %v, then %d rounds of %v at a fixed %d req/s (medians)\n",
		conns, runtime.GOMAXPROCS(0), span, rounds, roundSpan, rate)
	fmt.Fprintf(&sb, "%-13s %10s %9s %9s | %9s %9s %9s %12s %11s\n", "target", "max rps", "p50 µs", "p99 µs", "rate rps", "p50 µs", "p99 µs", "proxy CPU/req", "allocs/req")
	errors := func(r phaseResult) (n int64) {
		n = r.max.Errors
		for _, f := range r.fixed {
			n += f.Errors
		}
		return n
	}
	for _, r := range results {
		fmt.Fprintf(&sb, "%-13s %10.0f %9.0f %9.0f | %9.0f %9.0f %9.0f %10.1fµs %11.1f\n", r.name, r.max.rps(), r.max.P50us, r.max.P99us,
			r.fixedMedian(loadResult.rps), r.fixedMedian(func(l loadResult) float64 { return l.P50us }),
			r.fixedMedian(func(l loadResult) float64 { return l.P99us }), median(r.cpuPerReqUS), median(r.allocsReq))
		if n := errors(r); n > 0 {
			fmt.Fprintf(&sb, "  %s: %d errors\n", r.name, n)
		}
	}
	rp, ar, al := results[1], results[2], results[3]
	for i, x := range results[2:] {
		base := rp
		if x.name == "airouter-bin" {
			base = results[i+1] // revproxy-bin
		}
		rs := ratios(x, base)
		fmt.Fprintf(&sb, "%s / %s: CPU per request %.2fx (rounds %s), max rps %.2fx, p50 at the fixed rate %.2fx, p99 %.2fx\n",
			x.name, base.name, median(rs), fmtRatios(rs), x.max.rps()/base.max.rps(),
			x.fixedMedian(func(l loadResult) float64 { return l.P50us })/base.fixedMedian(func(l loadResult) float64 { return l.P50us }),
			x.fixedMedian(func(l loadResult) float64 { return l.P99us })/base.fixedMedian(func(l loadResult) float64 { return l.P99us }))
	}
	tr := results[len(results)-1]
	rs := ratios(tr, ar)
	fmt.Fprintf(&sb, "%s / %s (the cost of tracing every request): CPU per request %.2fx (rounds %s), +%.1fµs, max rps %.2fx\n",
		tr.name, ar.name, median(rs), fmtRatios(rs), median(tr.cpuPerReqUS)-median(ar.cpuPerReqUS), tr.max.rps()/ar.max.rps())
	sb.WriteString(batching() + "\n")
	// To stdout: the testing package keeps only ten lines of a
	// benchmark's log.
	fmt.Print(sb.String())
	b.ReportMetric(median(ratios(ar, rp)), "cpu-ratio")
	b.ReportMetric(median(ratios(al, rp)), "cpu-ratio-with-log")
	b.ReportMetric(median(rs), "cpu-ratio-tracing-on-off")
	if len(results) > 5 {
		b.ReportMetric(median(ratios(results[5], results[4])), "cpu-ratio-binary")
	}
	b.ReportMetric(median(ar.cpuPerReqUS), "airouter-cpu-µs/req")
	b.ReportMetric(median(rp.cpuPerReqUS), "revproxy-cpu-µs/req")
	b.ReportMetric(ar.max.rps(), "airouter-max-rps")
	b.ReportMetric(rp.max.rps(), "revproxy-max-rps")
}

func fmtRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(parts, " ")
}

func (r loadResult) rps() float64 {
	if r.Seconds == 0 {
		return 0
	}
	return float64(r.Requests) / r.Seconds
}
