package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// flakyUpstream answers a chat completion for any model, with a 500 while
// fail reports true for the request's model.
func flakyUpstream(t *testing.T, fail func(model string) bool) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string `json:"model"`
		}
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &req)
		w.Header().Set("Content-Type", "application/json")
		if fail(req.Model) {
			w.WriteHeader(500)
			fmt.Fprint(w, `{"error":{"message":"upstream says 500","type":"server_error"}}`)
			return
		}
		fmt.Fprint(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// nameSeries reads the requests_total series of cred-a's made-up-NNNNN
// names from /metrics: by name index, then status.
func nameSeries(t *testing.T, metrics string) map[int]map[string]int {
	t.Helper()
	const prefix = `auto_ai_router_requests_total{credential="cred-a",endpoint="/v1/chat/completions",model="made-up-`
	out := map[int]map[string]int{}
	for _, l := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(l, prefix)
		if !ok {
			continue
		}
		// rest: 00042",status="200"} 3
		num, labels, _ := strings.Cut(rest, `",status="`)
		status, value, _ := strings.Cut(labels, `"} `)
		i, err1 := strconv.Atoi(num)
		n, err2 := strconv.Atoi(value)
		if err1 != nil || err2 != nil {
			t.Fatalf("unreadable series %q", l)
		}
		if out[i] == nil {
			out[i] = map[string]int{}
		}
		out[i][status] = n
	}
	return out
}

// 1,500 client-chosen names on one credential through a real router whose
// config lists no models, sent three times (a third of them answered 500
// the first time): the log keeps every pair's record, below its bound of
// 2,000 nothing is dropped, and the requests_total series of the names
// given their own label count every request: each round adds one to each,
// none restarts.
func TestBusyClientNamesKeepTheirRecordsAndSeries(t *testing.T) {
	const names, rounds = 1500, 3
	var firstRound atomic.Bool
	firstRound.Store(true)
	fails := func(i int) bool { return i%3 == 0 }
	up := flakyUpstream(t, func(model string) bool {
		i, err := strconv.Atoi(strings.TrimPrefix(model, "made-up-"))
		return err == nil && firstRound.Load() && fails(i)
	})
	r := start(t, namesConfig(t, tempStore(t), up))

	for round := 1; round <= rounds; round++ {
		sendNames(t, r, names, func(i, code int, body []byte) {
			if code != 200 && (round > 1 || !fails(i)) {
				t.Errorf("round %d, name %d: %d %s", round, i, code, body)
			}
		})
		firstRound.Store(false)
		catchUp(t, r)

		if got := len(r.live.Load().PairsOf("cred-a")); got != names {
			t.Fatalf("round %d: the log keeps %d records of cred-a, want all %d", round, got, names)
		}
		_, _, mb := r.do(t, "GET", "/metrics", "", nil)
		series := nameSeries(t, string(mb))
		if len(series) < 900 {
			t.Fatalf("round %d: %d names have their own series, want about 1,000 (the label cap)", round, len(series))
		}
		bad := 0
		for i, byStatus := range series {
			want := map[string]int{"200": round}
			if fails(i) {
				want = map[string]int{"200": round - 1, "500": 1}
				if round == 1 {
					delete(want, "200")
				}
			}
			if fmt.Sprint(byStatus) != fmt.Sprint(want) && bad < 5 {
				bad++
				t.Errorf("round %d: made-up-%05d's requests_total %v, want %v", round, i, byStatus, want)
			}
		}
	}
	_, _, mb := r.do(t, "GET", "/metrics", "", nil)
	if v, _ := metricValue(string(mb), "airouter_pairs_forgotten_total"); v != "0" {
		t.Errorf("airouter_pairs_forgotten_total %s, want 0", v)
	}
}
