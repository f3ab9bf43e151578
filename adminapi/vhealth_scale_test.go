package adminapi

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airouter/airouter/internal/testkit"
)

// scaleRig is a rig on a pool of creds × models configured pairs
// (cred-0000… × model-000…), every pair with a failed outcome (500) on the
// log and a tenth of them banned for an hour ((c+m)%10 == 0), the pool
// transport/proxy's BenchmarkPoolScale builds.
func scaleRig(t testing.TB, creds, models int) *rig {
	t.Helper()
	return poolRig(t, creds, models, 100, []int{500}, time.Hour)
}

// poolRig is a rig on a pool of creds × models configured pairs (each
// credential with rpm), every pair with a failed outcome of each of codes
// on the log and a tenth of them ((c+m)%10 == 0) under an automatic ban
// of banFor (0: for good).
func poolRig(t testing.TB, creds, models, rpm int, codes []int, banFor time.Duration) *rig {
	t.Helper()
	cs := make([]Credential, creds)
	pairs := make([]Pair, 0, creds*models)
	for c := range cs {
		cs[c] = Credential{Name: fmt.Sprintf("cred-%04d", c), Type: "openai", RPM: rpm}
		for m := range models {
			pairs = append(pairs, Pair{Credential: cs[c].Name, Model: fmt.Sprintf("model-%03d", m)})
		}
	}
	r := newRigEdit(t, func(d *Deps) { d.Credentials, d.ConfiguredPairs = cs, pairs })
	at := r.clock.Now()
	published := 0
	for i, p := range pairs {
		for _, code := range codes {
			if !r.log.Publish(outcome(fmt.Sprintf("o/%d/%d", i, code), p.Credential, p.Model, code, at)) {
				t.Fatalf("the log dropped an outcome of pair %d", i)
			}
			// Within the log's queue (eventlog.DefaultQueueSize).
			if published++; published%16384 == 0 {
				if err := r.log.Flush(r.ctx); err != nil {
					t.Fatalf("flush the outcomes: %v", err)
				}
			}
		}
	}
	if err := r.log.Flush(r.ctx); err != nil {
		t.Fatalf("flush the outcomes: %v", err)
	}
	for i, p := range pairs {
		if (i/models+i%models)%10 == 0 {
			if _, err := r.log.PublishControl(r.ctx, autoBan(p.Credential, p.Model, 500, 3, at, banFor, uint64(i+1))); err != nil {
				t.Fatalf("publish a ban: %v", err)
			}
		}
	}
	last, err := r.log.LastSeq(r.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.live.WaitFor(r.ctx, last); err != nil {
		t.Fatal(err)
	}
	return r
}

// drawn is the dashboard at url in tab ctx once it has rendered /health
// and the browser has laid it out and painted it: the time from
// navigating, the part of it the page's read of /health took (request to
// the body's end), and the page's element count.
func drawn(t testing.TB, ctx context.Context, url string) (took, fetched time.Duration, nodes int) {
	t.Helper()
	t0 := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](`Number(document.body.dataset.renders || 0) >= 1`,
		chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s to render: %v", url, err)
	}
	nodes, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`new Promise(ok => requestAnimationFrame(() => requestAnimationFrame(() => ok(document.getElementsByTagName("*").length))))`,
		chromedp.EvalAwaitPromise))
	took = time.Since(t0)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	ms, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByType("resource").
		filter(e => new URL(e.name).pathname.endsWith("/health")).map(e => e.responseEnd - e.startTime)[0] || 0`))
	if err != nil {
		t.Fatalf("read %s's timings: %v", url, err)
	}
	return took, time.Duration(ms * float64(time.Millisecond)), nodes
}

// healthCost is the size of /health at path and its time over HTTP, the
// fastest of three reads.
func healthCost(t testing.TB, r *rig, path string) (time.Duration, int) {
	t.Helper()
	best, size := time.Duration(1<<62), 0
	for range 3 {
		t0 := time.Now()
		res, err := r.srv.Client().Get(r.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("GET %s: %d %v", path, res.StatusCode, err)
		}
		best, size = min(best, time.Since(t0)), int(n)
	}
	return best, size
}

// BenchmarkDashboardScale opens /vhealth in chromium on pools of 10,000
// and 100,000 configured pairs (100 and 1,000 credentials of 100 models, a
// tenth of the pairs banned) and prints, whole and with each filter, the
// size and read time of the /health the page reads, the time until the
// page has drawn it (and the page's own read of /health within it) and its
// element count.
//
//	go test ./adminapi -run '^$' -bench DashboardScale -benchtime 1x
func BenchmarkDashboardScale(b *testing.B) {
	if testing.Short() {
		b.Skip("builds pools of up to 100,000 pairs")
	}
	ctx := browser(b)
	// Start the browser before the first measurement.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		b.Fatalf("start the browser: %v", err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%-8s %-24s | %9s %9s | %9s %9s %9s\n", "pairs", "filter", "/health", "read", "drawn", "its read", "elements")
	for _, creds := range []int{100, 1000} {
		r := scaleRig(b, creds, 100)
		for _, q := range []string{"", "?credential=cred-0001", "?model=model-001", "?banned=true"} {
			read, size := healthCost(b, r, "/health"+q)
			took, fetched, nodes := drawn(b, ctx, r.srv.URL+"/vhealth"+q)
			fmt.Fprintf(&sb, "%-8d %-24s | %8.0fK %9v | %9v %9v %9d\n", creds*100, strings.TrimPrefix(q, "?"),
				float64(size)/1e3, read.Round(time.Millisecond), took.Round(time.Millisecond), fetched.Round(time.Millisecond), nodes)
		}
	}
	fmt.Print(sb.String())
}

// boundView is what the dashboard draws of a large pool, in page order.
type boundView struct {
	Cards     []string `json:"cards"`
	CardsMore struct {
		Count string `json:"count"`
		Text  string `json:"text"`
	} `json:"cardsMore"`
	Rows []struct {
		Key   string `json:"key"`
		Badge string `json:"badge"`
	} `json:"rows"`
	More []struct {
		Credential string `json:"credential"`
		Count      string `json:"count"`
		Text       string `json:"text"`
		Href       string `json:"href"`
	} `json:"more"`
	ModelsMore struct {
		Count string `json:"count"`
		Text  string `json:"text"`
	} `json:"modelsMore"`
	Elements int    `json:"elements"`
	Search   string `json:"search"`
	Renders  int    `json:"renders"`
}

const readBounds = `(() => {
  const more = (sel) => { const e = document.querySelector(sel); return e ? { count: e.dataset.count, text: e.textContent } : { count: "", text: "" }; };
  const v = { cards: [...document.querySelectorAll(".card")].map(c => c.dataset.credential), cardsMore: more("#cards-more"),
    rows: [], more: [], modelsMore: more("#models-more"), elements: document.getElementsByTagName("*").length,
    search: location.search, renders: Number(document.body.dataset.renders || 0) };
  for (const tr of document.querySelectorAll("#models tbody tr")) {
    if (tr.dataset.key) v.rows.push({ key: tr.dataset.key, badge: tr.querySelector(".badge").textContent });
    else if (tr.dataset.credential) { const a = tr.querySelector("a");
      v.more.push({ credential: tr.dataset.credential, count: tr.dataset.count, text: tr.textContent, href: a ? a.getAttribute("href") : "" }); }
  }
  return v;
})()`

// On a pool of 10,000 pairs (100 credentials of 100 models, a tenth of the
// pairs banned, one credential banned by an admin) the dashboard draws 50
// cards, the credential with all its pairs banned first, and 10 pairs of
// each, the banned ones first, each credential's rest counted on a line whose link opens
// the page on that credential with all 100 of its pairs; the credentials
// and pairs left out are counted, and the tiles count the whole pool.
// 10,000 and not 100,000 pairs: building and folding the larger log takes
// over a minute under -race on 2 cores (BenchmarkDashboardScale measures
// the page at 100,000).
func TestDashboardBoundsALargePool(t *testing.T) {
	ctx := browser(t)
	r := scaleRig(t, 100, 100)
	r.admin("POST", "/api/ban", `{"credential":"cred-0077","ttl":"30m","reason":"drain"}`, 200)
	_, whole := r.health()
	v := openDashboard(t, ctx, r.srv.URL+"/vhealth?every=600")
	// Every credential has a banned pair, so none is available.
	if v.Tiles["total"] != "100" || v.Tiles["banned"] != "100" || v.Tiles["admin"] != "1" ||
		v.Tiles["available"] != fmt.Sprint(whole.CredentialsAvailable) || v.Tiles["pairs"] != fmt.Sprint(whole.BannedPairs) {
		t.Errorf("tiles %v, want the whole pool's counts (available %d, banned pairs %d)", v.Tiles, whole.CredentialsAvailable, whole.BannedPairs)
	}
	screenshot(t, ctx, "vhealth-large-pool.png")
	b := readBoundView(t, ctx)
	if len(b.Cards) != 50 || b.Cards[0] != "cred-0077" || b.Cards[1] != "cred-0000" || b.Cards[49] != "cred-0048" {
		t.Errorf("cards %v, want cred-0077 (all its pairs banned) then cred-0000 to cred-0048", b.Cards)
	}
	if b.CardsMore.Count != "50" || !strings.HasPrefix(b.CardsMore.Text, "and 50 more credentials (0 available, 50 banned)") {
		t.Errorf("the cards' more line %+v, want 50 more credentials, all banned on some pair", b.CardsMore)
	}
	if b.ModelsMore.Count != "5000" || !strings.HasPrefix(b.ModelsMore.Text, "and 5000 more pairs of 50 more credentials") {
		t.Errorf("the models' more line %+v, want 5000 more pairs of 50 credentials", b.ModelsMore)
	}
	if len(b.Rows) != 500 || len(b.More) != 50 {
		t.Fatalf("%d pair rows and %d more lines, want 10 pairs and a more line for each of 50 credentials", len(b.Rows), len(b.More))
	}
	// cred-0003's banned pairs are its models 7, 17, ... 97: all ten drawn.
	for i, row := range b.Rows[40:50] {
		if want := fmt.Sprintf("cred-0003:model-%03d", 7+10*i); row.Key != want || row.Badge != "banned" {
			t.Errorf("cred-0003's row %d is %s %q, want %s banned", i, row.Key, row.Badge, want)
		}
	}
	more := b.More[4]
	if more.Credential != "cred-0003" || more.Count != "90" || !strings.HasPrefix(more.Text, "and 90 more pairs of cred-0003") ||
		more.Href != "vhealth?credential=cred-0003&every=600" {
		t.Errorf("cred-0003's more line %+v, want 90 more pairs linking to vhealth?credential=cred-0003&every=600", more)
	}
	if b.Elements > 10000 {
		t.Errorf("the page holds %d elements", b.Elements)
	}

	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#models tr.more[data-credential="cred-0003"] a`))); err != nil {
		t.Fatalf("click cred-0003's filter link: %v", err)
	}
	var one boundView
	testkit.Eventually(t, "the page filtered to cred-0003", func() bool {
		one, _ = chromedp.Run(ctx, chromedp.Evaluate[boundView](readBounds))
		return one.Search == "?credential=cred-0003&every=600" && one.Renders >= 1
	})
	if len(one.Cards) != 1 || one.Cards[0] != "cred-0003" || len(one.Rows) != 100 || len(one.More) != 0 || one.ModelsMore.Count != "" {
		t.Errorf("filtered to cred-0003 the page shows cards %v, %d rows, more lines %+v %+v; want its card and its 100 pairs",
			one.Cards, len(one.Rows), one.More, one.ModelsMore)
	}
	for i, row := range one.Rows {
		if !strings.HasPrefix(row.Key, "cred-0003:") || (i < 10) != (row.Badge == "banned") {
			t.Errorf("row %d is %s %q: want cred-0003's pairs, its 10 banned ones first", i, row.Key, row.Badge)
		}
	}
}

func readBoundView(t *testing.T, ctx context.Context) boundView {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[boundView](readBounds))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	return v
}
