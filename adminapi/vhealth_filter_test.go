package adminapi

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

// /vhealth?credential= reads the filtered /health and shows that credential
// alone.
func TestDashboardPassesHealthFilters(t *testing.T) {
	ctx := browser(t)
	r := newRig(t)
	requested := recordRequests(t, ctx)
	v := openDashboard(t, ctx, r.srv.URL+"/vhealth?credential=openai-2")
	if got := slices.Sorted(maps.Keys(v.Cards)); !slices.Equal(got, []string{"openai-2"}) {
		t.Errorf("the page shows credentials %v, want openai-2 alone", got)
	}
	urls := requested.all()
	if !slices.ContainsFunc(urls, func(u string) bool { return strings.HasSuffix(u, "/health?credential=openai-2") }) {
		t.Errorf("the page requested %v, not /health?credential=openai-2", urls)
	}
}
