// Command airbench measures what airouter adds to a request against a bare
// httputil.ReverseProxy, side by side in one run, and prints the table of
// the performance notes in the README ("What it costs"): CPU per request in
// a closed loop, CPU per SSE stream and its first-byte latency (streams back
// to back on every connection, which on one CPU is more than the proxies
// can take, and streams due at a fixed rate below that), the added
// p50/p99/p99.9 latency at fixed request rates (open loop), and the peak
// RSS (VmHWM) of every process.
//
// It runs every part as its own process: a fake upstream (JSON answers and
// 20-chunk streams 1 ms apart), the bare reverse proxy, the airouter binary
// (built from cmd/airouter unless -airouter names one) and the load
// generator, which are this binary again under -role. With -pin the proxies
// and the upstream share CPU 0 and the generator has CPU 1 alone (taskset),
// so the proxies run with GOMAXPROCS=1 and every background goroutine
// competes with requests, as on a busy node. With -apart as well the
// upstream runs on the generator's CPU instead, so CPU 0 holds the proxies
// without it: what a proxy costs then is its own, not the turns it takes
// with the upstream on one processor. The direct run then shares CPU 1
// with the generator, so its latencies are no floor.
//
//	go run ./cmd/airbench -pin -duration 3s
//
// -floor relay measures airouter against bareproxy.NewRelay, a floor below
// the ReverseProxy, and -floor-godebug starts the floor with a GODEBUG of
// its own (airouter's monitor setting, say): the tables name the floor.
//
// With -both it runs everything pinned, then unpinned, and ends with the
// ratios of both runs side by side (the README's table). With -trace it
// also takes an execution trace of each proxy at the first rate and
// prints what held its processors (holds.go).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

type options struct {
	pin bool
	// apart moves the upstream, when pinned, to the generator's CPU.
	apart    bool
	both     bool
	duration time.Duration
	conns    int
	rounds   int
	rates    []int
	// streamRate, when above 0, adds an open loop of streams due at this
	// many a second: below the proxies' capacity, so their CPU per stream
	// and first-byte latency are not a queue's.
	streamRate int
	airouter   string
	// relay makes the floor airouter is measured against
	// bareproxy.NewRelay instead of the ReverseProxy (-floor);
	// floorGodebug, when not "", is the GODEBUG of the floor's process
	// alone.
	relay        bool
	floorGodebug string
	// trace, when above 0, is how long an execution trace of each proxy
	// is taken at the first rate after the rounds.
	trace time.Duration
}

func main() {
	role := flag.String("role", "", "run as one part of the benchmark: upstream, revproxy or gen (the benchmark starts these itself)")
	upstream := flag.String("upstream", "", "with -role revproxy: the `URL` to proxy to")
	traces := flag.Bool("traces", false, "with -role revproxy: also serve /debug/pprof/trace on a port of its own")
	relay := flag.Bool("relay", false, "with -role revproxy: serve bareproxy.NewRelay instead of the ReverseProxy")
	var o options
	flag.BoolVar(&o.pin, "pin", false, "pin the proxies and the upstream to CPU 0 and the load generator to CPU 1 (taskset)")
	flag.BoolVar(&o.apart, "apart", false, "with -pin or -both: pin the upstream to CPU 1 with the load generator, so CPU 0 holds the proxies without it")
	flag.BoolVar(&o.both, "both", false, "run everything pinned, then unpinned, and print both tables and their ratios side by side")
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "how long each scenario runs against each target")
	flag.IntVar(&o.conns, "conns", 64, "keep-alive connections of every scenario")
	flag.IntVar(&o.rounds, "rounds", 1, "runs of every scenario and target, interleaved; the table shows their medians, and a second table compares the proxies round by round")
	rates := flag.String("rates", "2000,5000", "the fixed request rates of the open loops, comma-separated")
	flag.IntVar(&o.streamRate, "stream-rate", -1, "the fixed rate of the open loop of streams, a second (0 = none; default 500, or what -conns can start if fewer)")
	floor := flag.String("floor", floorReverseProxy, "what airouter is measured against: "+floorReverseProxy+
		" (httputil.ReverseProxy) or "+floorRelay+" (net/http's transport and a copy that flushes every read)")
	flag.StringVar(&o.floorGodebug, "floor-godebug", "", "a GODEBUG for the floor's process alone, e.g. schedtrace=2147483647 to run it with the monitor setting airouter starts with")
	flag.StringVar(&o.airouter, "airouter", "", "the airouter binary `PATH` (default: go build ./cmd/airouter, run from the module)")
	flag.DurationVar(&o.trace, "trace", 0, "after the rounds, take an execution trace this long of each proxy at the first rate and print what held its processors (0 = none)")
	flag.Parse()
	if o.streamRate == -1 {
		o.streamRate = defaultStreamRate(o.conns)
	}
	err := runRole(*role, *upstream, *traces, *relay)
	if *role == "" && err == nil {
		if o.rates, err = parseRates(*rates); err == nil {
			if o.relay, err = parseFloor(*floor); err == nil {
				err = checkOptions(o)
			}
		}
		if err == nil {
			err = bench(o, os.Stdout)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "airbench:", err)
		os.Exit(1)
	}
}

// runRole runs this process as one part of the benchmark; "" is none.
func runRole(role, upstream string, traces, relay bool) error {
	if relay && role != "revproxy" {
		return fmt.Errorf("-relay is for -role revproxy; the benchmark's floor is -floor %s", floorRelay)
	}
	switch role {
	case "":
		return nil
	case "upstream":
		return serveRole(upstreamHandler(), false, os.Stdin, os.Stdout)
	case "revproxy":
		h, err := bareProxy(upstream, relay)
		if err != nil {
			return err
		}
		return serveRole(h, traces, os.Stdin, os.Stdout)
	case "gen":
		return genRole(os.Stdin, os.Stdout)
	}
	return fmt.Errorf("-role %q: give upstream, revproxy or gen", role)
}

func parseRates(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-rates %q: %q is not a positive number of requests per second", s, f)
		}
		out = append(out, n)
	}
	return out, nil
}

func checkOptions(o options) error {
	switch {
	case o.duration < 100*time.Millisecond:
		return fmt.Errorf("-duration %v is shorter than 100ms", o.duration)
	case o.conns < 1 || o.conns > 4096:
		return fmt.Errorf("-conns %d is out of range 1..4096", o.conns)
	case o.rounds < 1 || o.rounds > 100:
		return fmt.Errorf("-rounds %d is out of range 1..100", o.rounds)
	case o.both && o.pin:
		return fmt.Errorf("-both runs pinned and unpinned: give it without -pin")
	case o.apart && !o.pin && !o.both:
		return fmt.Errorf("-apart places the upstream in a pinned run: give it with -pin or -both")
	case o.streamRate < 0 || o.streamRate > o.conns*streamsPerConn:
		return fmt.Errorf("-stream-rate %d is out of range 0..%d: a stream lasts about %v, and -conns %d connections start at most %d a second with room to spare",
			o.streamRate, o.conns*streamsPerConn, streamChunks*chunkGap, o.conns, o.conns*streamsPerConn)
	case o.trace < 0 || o.trace > time.Minute:
		return fmt.Errorf("-trace %v is out of range 0..1m", o.trace)
	}
	if o.floorGodebug == "" {
		return nil
	}
	for _, kv := range strings.Split(o.floorGodebug, ",") {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("-floor-godebug %q: every comma-separated entry must be key=value, and %q is not", o.floorGodebug, kv)
		}
	}
	return nil
}

// The floors airouter is measured against (-floor).
const (
	floorReverseProxy = "reverseproxy"
	floorRelay        = "relay"
)

// parseFloor reads -floor: whether the floor is the relay.
func parseFloor(s string) (relay bool, err error) {
	switch s {
	case floorReverseProxy:
		return false, nil
	case floorRelay:
		return true, nil
	}
	return false, fmt.Errorf("-floor %q: give %s or %s", s, floorReverseProxy, floorRelay)
}

// floorName is the floor's column in the tables.
func (o options) floorName() string {
	name := "bare ReverseProxy"
	if o.relay {
		name = "bare net/http relay"
	}
	if o.floorGodebug != "" {
		name += " (GODEBUG=" + o.floorGodebug + ")"
	}
	return name
}

// floorRole is how the floor is started: its role's arguments after
// -upstream, and its environment beyond this process's.
func (o options) floorRole() (args, env []string) {
	if o.relay {
		args = append(args, "-relay")
	}
	if o.trace > 0 {
		args = append(args, "-traces")
	}
	if o.floorGodebug != "" {
		env = []string{"GODEBUG=" + o.floorGodebug}
	}
	return args, env
}

// streamsPerConn is how many streams a second one connection of the
// stream open loop may be asked to start: one every two streams' length,
// so the generator does not queue them itself.
const streamsPerConn = int(time.Second / (2 * streamChunks * chunkGap))

// defaultStreamRate is -stream-rate's default: 500 streams a second, or as
// many as conns connections can start (streamsPerConn) if fewer.
func defaultStreamRate(conns int) int { return max(0, min(500, conns*streamsPerConn)) }

// layout is where a run's processes go: the CPU of the proxies, of the
// upstream and of the generator ("" unpinned), and a line saying so.
type layout struct {
	proxy, upstream, gen string
	says                 string
}

// cpus lays a run out (pinned or not, with the upstream apart or not) on
// this machine.
func cpus(pin, apart bool) layout {
	_, err := exec.LookPath("taskset")
	return layoutFor(pin, apart, err == nil, runtime.NumCPU())
}

// layoutFor lays a run out on a machine with ncpu CPUs, with or without
// taskset. Pinned, the proxies have CPU 0 and the generator CPU 1; the
// upstream shares CPU 0 with the proxies, or with apart CPU 1 with the
// generator.
func layoutFor(pin, apart, taskset bool, ncpu int) layout {
	switch {
	case !pin:
		return layout{says: fmt.Sprintf("unpinned: every process may use all %d CPUs (GOMAXPROCS=%d)", ncpu, ncpu)}
	case !taskset:
		return layout{says: "not pinned: taskset is not installed, so every process may use every CPU"}
	case ncpu < 2:
		return layout{says: "not pinned: pinning needs two CPUs, this machine has one"}
	case apart:
		return layout{proxy: "0", upstream: "1", gen: "1",
			says: "pinned: proxies on CPU 0 without the upstream (GOMAXPROCS=1), upstream and load generator on CPU 1"}
	}
	return layout{proxy: "0", upstream: "0", gen: "1",
		says: "pinned: proxies and upstream on CPU 0 (GOMAXPROCS=1), load generator alone on CPU 1"}
}

// bench writes the table of one run (pinned with -pin), or with -both
// the table of a pinned run, then of an unpinned one, then their ratios
// side by side.
func bench(o options, w io.Writer) error {
	if !o.both {
		r, err := runOnce(o, o.pin)
		if err == nil {
			r.write(w, o)
		}
		return err
	}
	var runs [2]runResult
	for i, pin := range []bool{true, false} {
		r, err := runOnce(o, pin)
		if err != nil {
			return err
		}
		r.write(w, o)
		fmt.Fprintln(w)
		runs[i] = r
	}
	writeBoth(w, runs[0], runs[1])
	return nil
}

// runResult is what one run measured: every scenario, every process's
// peak RSS (upstream, bare, airouter; then the generator's) and how it
// was pinned.
type runResult struct {
	scs    []scenario
	rss    [3]float64
	genRSS float64
	says   string
	idle   string // how the machine's idle CPUs waited (idleHandling)
	floor  string // the floor's column name (options.floorName)
	// holds are the bare proxy's and airouter's execution traces (-trace),
	// nil without.
	holds []holdReport
}

func (r runResult) write(w io.Writer, o options) {
	fmt.Fprintf(w, "%s; %d keep-alive connections, %v a scenario and target, medians of %d rounds\n%s\n\n",
		r.says, o.conns, o.duration, o.rounds, r.idle)
	writeTable(w, r.floor, r.scs, r.rss, r.genRSS)
	if r.holds != nil {
		writeHolds(w, o, r.floor, r.holds)
	}
	if !o.both {
		writeRounds(w, []runResult{r}, []string{"this run"})
	}
}

// runOnce starts the parts (pinned or not), runs every scenario against
// every target back to back, and stops them.
func runOnce(o options, pin bool) (runResult, error) {
	lay := cpus(pin, o.apart)
	dir, err := os.MkdirTemp("", "airbench-")
	if err != nil {
		return runResult{}, err
	}
	defer os.RemoveAll(dir)
	var procs []*proc
	defer func() {
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
		}
	}()
	start := func(p *proc, err error) (*proc, error) {
		if err == nil {
			procs = append(procs, p)
		}
		return p, err
	}
	up, err := start(startRole("upstream", lay.upstream, nil, "-role", "upstream"))
	if err != nil {
		return runResult{}, err
	}
	floorArgs, floorEnv := o.floorRole()
	bare, err := start(startRole("bare", lay.proxy, floorEnv, append([]string{"-role", "revproxy", "-upstream", up.url}, floorArgs...)...))
	if err != nil {
		return runResult{}, err
	}
	bin := o.airouter
	if bin == "" {
		if bin, err = buildAirouter(dir); err != nil {
			return runResult{}, err
		}
	}
	ar, err := start(startAirouter(bin, lay.proxy, dir, up.url, o.trace > 0))
	if err != nil {
		return runResult{}, err
	}
	gen, err := start(startRole("gen", lay.gen, nil, "-role", "gen"))
	if err != nil {
		return runResult{}, err
	}
	res, err := runScenarios(o, gen, []*proc{up, bare, ar})
	if err != nil {
		return runResult{}, err
	}
	r := runResult{scs: res, rss: [3]float64{up.peakRSS(), bare.peakRSS(), ar.peakRSS()}, genRSS: gen.peakRSS(), says: lay.says, floor: o.floorName(),
		idle: idleHandling("/")}
	if o.trace > 0 {
		r.holds, err = traceHolds(o, gen, bare, ar)
	}
	return r, err
}
