package adminapi

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// /vhealth?credential= reads the filtered /health and shows that credential
// alone.
func TestDashboardPassesHealthFilters(t *testing.T) {
	ctx := browser(t)
	r := newRig(t)
	requested := recordRequests(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(r.srv.URL+"/vhealth?credential=openai-2")); err != nil {
		t.Fatalf("open /vhealth: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](`Number(document.body.dataset.renders || 0) >= 1`, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("waiting for the page: %v", err)
	}
	v, err := chromedp.Run(ctx, chromedp.Evaluate[pageView](readPage))
	if err != nil {
		t.Fatalf("read the page: %v", err)
	}
	if got := slices.Sorted(maps.Keys(v.Cards)); !slices.Equal(got, []string{"openai-2"}) {
		t.Errorf("the page shows credentials %v, want openai-2 alone", got)
	}
	urls := requested.all()
	if !slices.ContainsFunc(urls, func(u string) bool { return strings.HasSuffix(u, "/health?credential=openai-2") }) {
		t.Errorf("the page requested %v, not /health?credential=openai-2", urls)
	}
}
