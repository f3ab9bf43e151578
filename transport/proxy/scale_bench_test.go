package proxy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/adminapi"
	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/hashicorp/go-hclog"
)

// BenchmarkPoolScale builds pools of 10, 100 and 1,000 credentials with 1,
// 10 and 100 models each in process, every pair named by an outcome on
// the log and a tenth of them banned, and prints one row per pool: the
// start-up (folding the log, building the proxy and the admin API), the
// live heap that holds, the resident set it added at its peak (VmHWM) and
// what stays resident once garbage is collected (VmRSS; both over the
// process's before the pool, all in one process, so the test binary's own
// pages are not counted), selection over one model's pool, the snapshot
// swap per event (Live.Apply of one event with nothing pending behind it,
// so every event publishes), and /health's size and render time, whole
// and with ?credential=, ?model= and ?banned=true.
//
//	go test ./transport/proxy -run '^$' -bench PoolScale -benchtime 1x
func BenchmarkPoolScale(b *testing.B) {
	if testing.Short() {
		b.Skip("builds pools of up to 100,000 pairs")
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-6s %-6s %8s | %10s %9s %9s %9s | %9s | %12s %12s | %9s %10s | %12s %10s %12s\n", "creds", "models", "pairs",
		"start-up", "heap MB", "peak RSS", "RSS", "select", "swap/outcome", "swap/ban", "/health", "render",
		"?credential=", "?model=", "?banned=true")
	for _, creds := range []int{10, 100, 1000} {
		for _, models := range []int{1, 10, 100} {
			r := measurePool(b, creds, models)
			fmt.Fprintf(&sb, "%-6d %-6d %8d | %10v %9.1f %9s %9s | %9v | %12v %12v | %8.0fK %10v | %12v %10v %12v\n", creds, models, creds*models,
				r.startup.Round(time.Millisecond), r.heapMB, mbOrDash(r.rssPeakMB), mbOrDash(r.rssMB), r.sel, r.swapOutcome, r.swapBan,
				float64(r.healthBytes)/1e3, r.health.Round(10*time.Microsecond), r.healthOne.Round(time.Microsecond),
				r.healthModel.Round(time.Microsecond), r.healthBanned.Round(10*time.Microsecond))
		}
	}
	fmt.Print(sb.String())
}

type poolScale struct {
	startup, sel, swapOutcome, swapBan, health, healthOne, healthModel, healthBanned time.Duration
	// heapMB is the live heap start-up added; rssPeakMB and rssMB the
	// resident set it added at its peak and once garbage is collected
	// (NaN where /proc cannot tell).
	heapMB, rssPeakMB, rssMB float64
	healthBytes              int
}

// mbOrDash formats MB, "-" for NaN.
func mbOrDash(mb float64) string {
	if math.IsNaN(mb) {
		return "-"
	}
	return fmt.Sprintf("%.1f", mb)
}

// scalePool is the configuration and the log of a pool of creds × models
// pairs: a failed outcome on every pair, then a ban of a tenth of them.
func scalePool(creds, models int) ([]Credential, []Route, []domain.Event) {
	cs := make([]Credential, creds)
	var routes []Route
	var evs []domain.Event
	at := testNow.Add(-time.Minute)
	for c := range cs {
		cs[c] = Credential{Name: fmt.Sprintf("cred-%04d", c), Type: domain.CredentialOpenAI,
			BaseURL: "http://127.0.0.1:1/v1", APIKey: fmt.Sprintf("sk-scale-%04d-0123456789", c)}
		for m := range models {
			model := fmt.Sprintf("model-%03d", m)
			routes = append(routes, Route{Model: model, Credential: cs[c].Name})
			evs = append(evs, domain.Event{V: domain.SchemaVersion, Kind: domain.KindOutcomeRecorded, At: at,
				ID: fmt.Sprintf("o/%d/%d", c, m), Outcome: &domain.Outcome{Credential: cs[c].Name, Model: model,
					Status: 500, Class: domain.ClassifyStatus(500), LatencyMS: 100, Attempt: 1}})
		}
	}
	// A tenth of every model's pairs, and of every credential's.
	for i := range creds * models {
		if c, m := i/models, i%models; (c+m)%10 == 0 {
			o := evs[i].Outcome
			evs = append(evs, scaleBan(o.Credential, o.Model, at, uint64(i+1)))
		}
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	return cs, routes, evs
}

func scaleBan(cred, model string, at time.Time, cause uint64) domain.Event {
	until := at.Add(time.Hour)
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanImposed, At: at, ID: fmt.Sprintf("f2b/%s/%s/%d", cred, model, cause),
		Ban: &domain.Ban{Credential: cred, Model: model, Origin: domain.OriginFail2Ban, ErrorCode: 429, Reason: "3 x 429",
			Since: at, Until: &until, Failures: 3, CauseSeq: cause}}
}

func liveHeap() uint64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func measurePool(b *testing.B, creds, models int) poolScale {
	cs, routes, evs := scalePool(creds, models)
	var r poolScale
	heap0 := liveHeap()
	rss0, rssOK := rssMark()
	t0 := time.Now()
	live := projections.NewLive(nil)
	for i, ev := range evs {
		live.Apply(ev, uint64(len(evs)-1-i))
	}
	p, err := New(Deps{Credentials: cs, Routes: routes, MasterKey: masterKey, Gate: func() Gate { return live.Load() }})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	pairs := make([]adminapi.Pair, len(routes))
	acs := make([]adminapi.Credential, len(cs))
	for i, c := range cs {
		acs[i] = adminapi.Credential{Name: c.Name, Type: c.Type}
	}
	for i, rt := range routes {
		pairs[i] = adminapi.Pair{Credential: rt.Credential, Model: rt.Model}
	}
	api, err := adminapi.New(adminapi.Deps{MasterKey: masterKey, Credentials: acs, ConfiguredPairs: pairs,
		Snapshot: live.Load, WaitFor: live.WaitFor,
		Publish: func(context.Context, domain.Event) (uint64, error) { return 0, errors.New("read-only") },
		Logger:  hclog.NewNullLogger(), Clock: func() time.Time { return testNow },
		LogStatus: func() adminapi.LogStatus { return adminapi.LogStatus{Connected: true} }})
	if err != nil {
		b.Fatal(err)
	}
	r.startup = time.Since(t0)
	r.rssPeakMB, r.rssMB = math.NaN(), math.NaN()
	if peak, ok := rssPeak(); ok && rssOK {
		r.rssPeakMB = peak - rss0
	}
	if now, ok := rssNow(); ok && rssOK {
		r.rssMB = now - rss0
	}
	r.heapMB = float64(liveHeap()-min(heap0, liveHeap())) / 1e6
	r.sel = timeSelect(b, p, live.Load())
	r.swapOutcome, r.swapBan = timeSwaps(live, evs, creds*models)
	h := api.Handler()
	r.health, r.healthBytes = timeGet(b, h, "/health")
	r.healthOne, _ = timeGet(b, h, "/health?credential=cred-0001")
	r.healthModel, _ = timeGet(b, h, "/health?model=model-000")
	r.healthBanned, _ = timeGet(b, h, "/health?banned=true")
	return r
}

// timeSelect is one pick over model-000's pool (every credential).
func timeSelect(b *testing.B, p *Proxy, gate Gate) time.Duration {
	pl := p.poolFor("model-000")
	skip := newIdxSet(len(pl.cands))
	const n = 20000
	t0 := time.Now()
	for range n {
		clear(skip)
		if pl.pick(gate, testNow, skip, epChat, nil) < 0 {
			b.Fatal("no pick")
		}
	}
	return time.Since(t0) / n
}

// timeSwaps is the mean Live.Apply of an outcome and of a ban on pairs
// spread over the pool, each publishing a snapshot.
func timeSwaps(live *projections.Live, evs []domain.Event, pairs int) (outcome, ban time.Duration) {
	seq := evs[len(evs)-1].Seq
	const n = 200
	run := func(mk func(o *domain.Outcome, i int) domain.Event) time.Duration {
		t0 := time.Now()
		for i := range n {
			ev := mk(evs[(i*7919)%pairs].Outcome, i)
			seq++
			ev.Seq = seq
			live.Apply(ev, 0)
		}
		return time.Since(t0) / n
	}
	outcome = run(func(o *domain.Outcome, i int) domain.Event {
		ev := evs[0]
		oc := *o
		oc.Status, oc.Class = 200, domain.ClassifyStatus(200)
		ev.ID, ev.Outcome = fmt.Sprintf("swap/%d", i), &oc
		return ev
	})
	ban = run(func(o *domain.Outcome, i int) domain.Event {
		return scaleBan(o.Credential, o.Model, testNow, seq+1)
	})
	return outcome, ban
}

// timeGet renders path on h (the fastest of three) and its size; an
// answer other than /health's 200 or 503 (a small pool is wholly banned
// by timeSwaps' bans) fails the benchmark.
func timeGet(b *testing.B, h http.Handler, path string) (time.Duration, int) {
	best, size := time.Duration(1<<62), 0
	for range 3 {
		w := httptest.NewRecorder()
		t0 := time.Now()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		best = min(best, time.Since(t0))
		if w.Code != http.StatusOK && w.Code != http.StatusServiceUnavailable {
			b.Fatalf("GET %s: %d %.200s", path, w.Code, w.Body.Bytes())
		}
		size = w.Body.Len()
	}
	return best, size
}
