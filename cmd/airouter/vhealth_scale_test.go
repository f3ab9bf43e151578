package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/internal/testkit"
)

// On a pool of more credentials than the dashboard draws cards for (60
// against 50), its timeline has a strip for each credential with a card
// and for a left-out one a timeline entry names (cred-59, banned and
// unbanned in the window), not one for every credential.
func TestDashboardStripsFollowTheCards(t *testing.T) {
	ctx := testkit.Browser(t)
	up := newUpstream(t, 200)
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  master_key: %s\n  port: 8080\n  shutdown_delay: 0s\nevents:\n  store_dir: %s\n  storage: file\ncredentials:\n",
		testMasterKey, tempStore(t))
	for i := range 60 {
		fmt.Fprintf(&b, "  - name: cred-%02d\n    type: openai\n    api_key: sk-upstream-secret-%d\n    base_url: %s/v1\n", i, i, up.URL)
	}
	b.WriteString("models:\n  - name: gpt-test\n")
	cfg, err := config.Parse([]byte(b.String()), nil)
	if err != nil {
		t.Fatalf("test config: %v", err)
	}
	clock := clockwork.NewFakeClockAt(pastT0)
	r := startOn(t, cfg, clock)
	if status, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-59", "ttl": "2h", "reason": "drain"}); status != 200 {
		t.Fatalf("/api/ban = %d %s", status, body)
	}
	clock.Advance(30 * time.Minute)
	if status, _, body := r.do(t, "POST", "/api/unban", testMasterKey, map[string]any{"credential": "cred-59"}); status != 200 {
		t.Fatalf("/api/unban = %d %s", status, body)
	}
	clock.Advance(30 * time.Minute)
	settle(t, r)

	if err := chromedp.Do(ctx, chromedp.Navigate(r.url+"/vhealth?every=600")); err != nil {
		t.Fatalf("open /vhealth: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](`Number(document.body.dataset.timelines || 0) >= 1`,
		chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("waiting for the timeline: %v", err)
	}
	type view struct {
		Cards  int      `json:"cards"`
		Strips []string `json:"strips"`
		Bars   []string `json:"bars"`
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[view](`({ cards: document.querySelectorAll(".card").length,
		strips: [...document.querySelectorAll(".strip")].map(s => s.dataset.credential),
		bars: [...document.querySelectorAll(".strip .bar")].map(b => b.closest(".strip").dataset.credential + " " + b.dataset.kind) })`))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	want := make([]string, 0, 51)
	for i := range 50 {
		want = append(want, fmt.Sprintf("cred-%02d", i))
	}
	want = append(want, "cred-59")
	if v.Cards != 50 || !slices.Equal(v.Strips, want) {
		t.Errorf("%d cards and strips %v, want 50 cards and strips for cred-00 to cred-49 and cred-59", v.Cards, v.Strips)
	}
	if !slices.Equal(v.Bars, []string{"cred-59 ban"}) {
		t.Errorf("bars %v, want cred-59's ban", v.Bars)
	}
}
