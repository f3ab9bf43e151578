package proxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

// loadResult is what the child reports for one load run.
type loadResult struct {
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	Seconds  float64 `json:"seconds"`
	P50us    float64 `json:"p50_us"`
	P99us    float64 `json:"p99_us"`
	ChildCPU float64 `json:"child_cpu_s"`
}

// runBenchChild serves the fake upstream and runs load on command:
// "load <url> <conns> <rate|0> <seconds>".
func runBenchChild(in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	answer := []byte(chatOK("hello"))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(out, "ready http://%s\n", ln.Addr())
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var target string
		var conns, rate int
		var secs float64
		if _, err := fmt.Sscanf(sc.Text(), "load %s %d %d %f", &target, &conns, &rate, &secs); err != nil {
			return fmt.Errorf("bad command %q: %w", sc.Text(), err)
		}
		before := testkit.ProcessCPU().Seconds()
		res := generateLoad(target, conns, rate, time.Duration(secs*float64(time.Second)))
		res.ChildCPU = testkit.ProcessCPU().Seconds() - before
		b, _ := json.Marshal(res)
		fmt.Fprintf(out, "%s\n", b)
	}
	return sc.Err()
}

// generateLoad keeps conns keep-alive connections busy for d, as fast as
// they go (rate 0) or at rate requests per second in total.
func generateLoad(target string, conns, rate int, d time.Duration) loadResult {
	tr := &http.Transport{MaxIdleConns: 2 * conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"Say hello in one word."}],"temperature":0}`
	send := func() (time.Duration, bool) {
		req, _ := http.NewRequest(http.MethodPost, target+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+masterKey)
		req.Header.Set("Content-Type", "application/json")
		t0 := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			return 0, false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return time.Since(t0), resp.StatusCode == 200
	}
	// warm the connections up
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() { defer wg.Done(); send() }()
	}
	wg.Wait()

	lat := make([][]time.Duration, conns)
	errs := make([]int64, conns)
	start := time.Now()
	deadline := start.Add(d)
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var interval time.Duration
			next := start
			if rate > 0 {
				interval = time.Duration(float64(time.Second) * float64(conns) / float64(rate))
				next = start.Add(interval * time.Duration(w) / time.Duration(conns))
			}
			for {
				if rate > 0 {
					if wait := time.Until(next); wait > 0 {
						time.Sleep(wait)
					}
					next = next.Add(interval)
				}
				if time.Now().After(deadline) {
					return
				}
				el, ok := send()
				if !ok {
					errs[w]++
					continue
				}
				lat[w] = append(lat[w], el)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	var all []time.Duration
	var nerr int64
	for w := range conns {
		all = append(all, lat[w]...)
		nerr += errs[w]
	}
	slices.Sort(all)
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[int(p*float64(len(all)-1))].Nanoseconds()) / 1e3
	}
	return loadResult{Requests: int64(len(all)), Errors: nerr, Seconds: elapsed, P50us: pct(0.50), P99us: pct(0.99)}
}

// heapObjects is the number of heap objects allocated so far.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:objects"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

type benchChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	url string
}

// startBenchChild re-executes this test binary as a child: by default the
// upstream and load generator; with env, another role (runReverseProxyChild).
func startBenchChild(b *testing.B, env ...string) *benchChild {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchChildEnv+"=1", "GOMAXPROCS="+fmt.Sprint(runtime.GOMAXPROCS(0)))
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &benchChild{cmd: cmd, in: in, out: bufio.NewReader(outPipe)}
	line, err := c.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		b.Fatalf("bench child did not start: %q %v", line, err)
	}
	c.url = strings.TrimSpace(strings.TrimPrefix(line, "ready "))
	b.Cleanup(func() { _ = in.Close(); _ = cmd.Wait() })
	return c
}

func (c *benchChild) load(b *testing.B, target string, conns, rate int, d time.Duration) loadResult {
	fmt.Fprintf(c.in, "load %s %d %d %f\n", target, conns, rate, d.Seconds())
	line, err := c.out.ReadString('\n')
	if err != nil {
		b.Fatalf("bench child: %v", err)
	}
	var r loadResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		b.Fatalf("bench child said %q: %v", line, err)
	}
	return r
}
