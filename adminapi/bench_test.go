package adminapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// bigPool is a rig with 50 credentials of 20 models each, every pair with
// a failure counted, and 50 bans on half the credentials (a tenth of them
// credential-wide).
func bigPool(b *testing.B) *rig {
	b.Helper()
	r := newRig(b)
	creds := make([]Credential, 50)
	var pairs []Pair
	var evs []domain.Event
	at := r.clock.Now()
	for c := range creds {
		creds[c] = Credential{Name: fmt.Sprintf("cred-%02d", c), Type: "openai", RPM: 100}
		for m := range 20 {
			model := fmt.Sprintf("model-%02d", m)
			pairs = append(pairs, Pair{Credential: creds[c].Name, Model: model})
			evs = append(evs, outcome(fmt.Sprintf("o/%d/%d", c, m), creds[c].Name, model, 429, at))
		}
		for m := range 2 {
			if c%2 == 1 {
				break
			}
			model := fmt.Sprintf("model-%02d", m)
			if c%10 == 0 && m == 0 {
				model = domain.AllModels
			}
			evs = append(evs, autoBan(creds[c].Name, model, 429, 3, at, time.Hour, uint64(c*100+m)))
		}
	}
	r.publish(evs...)
	api, err := New(Deps{
		MasterKey: masterKey, Credentials: creds, ConfiguredPairs: pairs,
		Snapshot: r.live.Load, WaitFor: r.live.WaitFor, Publish: r.log.PublishControl,
		LogStatus: func() LogStatus { return LogStatus{Connected: true} },
		Clock:     r.clock.Now,
	})
	if err != nil {
		b.Fatal(err)
	}
	api.SetTraffic(r)
	r.api = api
	return r
}

// BenchmarkHealth renders /health for 50 credentials and 1000 pairs.
func BenchmarkHealth(b *testing.B) {
	r := bigPool(b)
	h := r.api.Handler()
	req := httptest.NewRequest("GET", "/health", nil)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkScrape gathers every metric of the same pool.
func BenchmarkScrape(b *testing.B) {
	r := bigPool(b)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.api.Registry().Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBanRoundTrip is POST /api/ban over HTTP on a real log: publish,
// consume, fold, publish the snapshot, answer.
func BenchmarkBanRoundTrip(b *testing.B) {
	r := newRig(b)
	b.ResetTimer()
	for b.Loop() {
		r.admin("POST", "/api/ban", `{"credential":"openai-1","ttl":"30m","reason":"bench"}`, 200)
	}
}

// BenchmarkAttempt is the per-attempt metrics hook the proxy calls.
func BenchmarkAttempt(b *testing.B) {
	r := newRig(b)
	m := r.api.Metrics()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Attempt("openai-1", "gpt-4o", "chat.completions", 200, 300*time.Millisecond)
		}
	})
}
