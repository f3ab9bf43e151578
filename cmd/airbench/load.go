package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// loadCmd is one run the generator is asked for.
type loadCmd struct {
	// Mode is "closed" (conns requests in flight, back to back), "stream"
	// (the same with streamed answers), "rate" (open loop: requests are
	// due at Rate per second, on Conns connections, whatever the answers
	// do) or "stream-rate" (the open loop with streamed answers).
	Mode    string  `json:"mode"`
	URL     string  `json:"url"`
	Conns   int     `json:"conns"`
	Rate    int     `json:"rate,omitempty"`
	Seconds float64 `json:"seconds"`
}

// loadResult is what a run measured. Latencies are µs from the moment a
// request was due (open loop) or sent (closed loop) to its last byte;
// first byte is to the first byte of the body.
type loadResult struct {
	Requests int64   `json:"requests"`
	Errors   int64   `json:"errors"`
	Seconds  float64 `json:"seconds"`
	P50      float64 `json:"p50_us"`
	P99      float64 `json:"p99_us"`
	P999     float64 `json:"p999_us"`
	FirstP50 float64 `json:"first_byte_p50_us"`
	FirstP99 float64 `json:"first_byte_p99_us"`
}

func (r loadResult) rps() float64 {
	if r.Seconds == 0 {
		return 0
	}
	return float64(r.Requests) / r.Seconds
}

// genRole reads loadCmds from in, one JSON object a line, and answers
// each with its loadResult.
func genRole(in io.Reader, out io.Writer) error {
	fmt.Fprintln(out, "ready gen")
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		var c loadCmd
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return fmt.Errorf("bad command %q: %w", sc.Text(), err)
		}
		b, _ := json.Marshal(runLoad(c))
		fmt.Fprintf(out, "%s\n", b)
	}
	return sc.Err()
}

// sample is one request's timings.
type sample struct {
	total, first time.Duration
	ok           bool
}

// client sends the benchmark's requests to one target.
type client struct {
	c      *http.Client
	url    string
	body   string
	stream bool
}

func newClient(c loadCmd) *client {
	tr := &http.Transport{MaxIdleConns: 2 * c.Conns, MaxIdleConnsPerHost: c.Conns, MaxConnsPerHost: c.Conns,
		DisableCompression: true, IdleConnTimeout: time.Minute}
	stream := c.Mode == "stream" || c.Mode == "stream-rate"
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"Say hello in one word."}],"temperature":0}`
	if stream {
		body = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"Say hello in twenty words."}]}`
	}
	return &client{c: &http.Client{Transport: tr, Timeout: 30 * time.Second}, url: c.URL + "/v1/chat/completions", body: body, stream: stream}
}

// send sends one request due at due and times it.
func (cl *client) send(due time.Time, buf []byte) sample {
	req, _ := http.NewRequest(http.MethodPost, cl.url, strings.NewReader(cl.body))
	req.Header.Set("Authorization", "Bearer "+masterKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := cl.c.Do(req)
	if err != nil {
		return sample{}
	}
	defer resp.Body.Close()
	var s sample
	for n := 0; err == nil; {
		n, err = resp.Body.Read(buf)
		if n > 0 && s.first == 0 {
			s.first = time.Since(due)
		}
	}
	s.total = time.Since(due)
	s.ok = err == io.EOF && resp.StatusCode == http.StatusOK
	return s
}

// runLoad runs c after warming conns connections up.
func runLoad(c loadCmd) loadResult {
	cl := newClient(c)
	defer cl.c.Transport.(*http.Transport).CloseIdleConnections()
	var wg sync.WaitGroup
	for range c.Conns {
		wg.Add(1)
		go func() { defer wg.Done(); cl.send(time.Now(), make([]byte, 4096)) }()
	}
	wg.Wait()
	d := time.Duration(c.Seconds * float64(time.Second))
	start := time.Now()
	var all []sample
	if c.Mode == "rate" || c.Mode == "stream-rate" {
		all = openLoop(cl, c.Conns, c.Rate, start, d)
	} else {
		all = closedLoop(cl, c.Conns, start.Add(d))
	}
	return summarize(all, time.Since(start).Seconds())
}

// closedLoop keeps conns requests in flight until deadline.
func closedLoop(cl *client, conns int, deadline time.Time) []sample {
	return perConn(conns, func(_ int, buf []byte) (got []sample) {
		for time.Now().Before(deadline) {
			got = append(got, cl.send(time.Now(), buf))
		}
		return got
	})
}

// openLoop sends rate requests per second for d over conns connections,
// each connection on its own schedule of rate/conns a second, and times
// every request from when it was due: a stall shows in the latency of
// every request it delays (no coordinated omission), while the requests
// in flight stay bounded by conns, as behind a client's connection pool.
func openLoop(cl *client, conns, rate int, start time.Time, d time.Duration) []sample {
	interval := time.Duration(float64(time.Second) * float64(conns) / float64(rate))
	return perConn(conns, func(w int, buf []byte) (got []sample) {
		for due := start.Add(interval * time.Duration(w) / time.Duration(conns)); due.Before(start.Add(d)); due = due.Add(interval) {
			if wait := time.Until(due); wait > 0 {
				time.Sleep(wait)
			}
			got = append(got, cl.send(due, buf))
		}
		return got
	})
}

// perConn runs send for each of conns connections at once, each with its
// own read buffer, and returns all their samples.
func perConn(conns int, send func(w int, buf []byte) []sample) []sample {
	per := make([][]sample, conns)
	var wg sync.WaitGroup
	for w := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			per[w] = send(w, make([]byte, 4096))
		}()
	}
	wg.Wait()
	return slices.Concat(per...)
}

func summarize(all []sample, secs float64) loadResult {
	r := loadResult{Seconds: secs}
	var total, first []time.Duration
	for _, s := range all {
		if !s.ok {
			r.Errors++
			continue
		}
		total, first = append(total, s.total), append(first, s.first)
	}
	r.Requests = int64(len(total))
	r.P50, r.P99, r.P999 = pct(total, 0.5), pct(total, 0.99), pct(total, 0.999)
	r.FirstP50, r.FirstP99 = pct(first, 0.5), pct(first, 0.99)
	return r
}

// pct is the p-quantile of xs in µs (xs is sorted in place).
func pct(xs []time.Duration, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return float64(xs[int(p*float64(len(xs)-1))].Nanoseconds()) / 1e3
}
