package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The dashboard check of TestMetricsAfterTraffic: every metric name the
// Grafana dashboard's queries reference must be in a scrape of a router
// that served traffic, so the dashboard cannot drift from what the router
// exports.

// promqlWord is a name in a PromQL expression; promqlNotMetric are the
// words of the dashboard's expressions that name no metric.
var (
	promqlWord      = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlLabels    = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]|"[^"]*"|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlNotMetric = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "bool": true,
		"and": true, "or": true, "unless": true, "offset": true}
)

// dashboardMetrics returns every metric name the dashboard's expressions
// and template queries reference.
func dashboardMetrics(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct {
				Type       string          `json:"type"`
				Query      json.RawMessage `json:"query"`
				Datasource json.RawMessage `json:"datasource"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			ID         int             `json:"id"`
			Title      string          `json:"title"`
			Datasource json.RawMessage `json:"datasource"`
			Targets    []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var exprs []string
	hasDatasourceVar := false
	for _, v := range dash.Templating.List {
		switch v.Type {
		case "datasource":
			hasDatasourceVar = true
		case "query":
			var q struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(v.Query, &q); err != nil {
				t.Fatalf("%s: template query %s: %v", path, v.Query, err)
			}
			exprs = append(exprs, strings.NewReplacer("label_values(", "(").Replace(q.Query))
		}
	}
	if !hasDatasourceVar {
		t.Errorf("%s has no datasource variable", path)
	}
	ids := map[int]bool{}
	for _, p := range dash.Panels {
		if ids[p.ID] {
			t.Errorf("%s: panel %q reuses id %d", path, p.Title, p.ID)
		}
		ids[p.ID] = true
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("%s: panel %q has a target without an expression", path, p.Title)
			}
			if !strings.Contains(string(p.Datasource), "${datasource}") {
				t.Errorf("%s: panel %q does not use the datasource variable", path, p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	var names []string
	for _, e := range exprs {
		e = promqlLabels.ReplaceAllString(e, " ")
		for _, loc := range promqlWord.FindAllStringIndex(e, -1) {
			w := e[loc[0]:loc[1]]
			rest := strings.TrimLeft(e[loc[1]:], " ")
			if promqlNotMetric[w] || strings.HasPrefix(rest, "(") || (loc[0] > 0 && strings.ContainsAny(e[loc[0]-1:loc[0]], "0123456789.")) {
				continue // a function, a keyword, or a number's digits
			}
			// "credential" in label_values(metric, credential) is a label.
			if before := strings.TrimRight(e[:loc[0]], " "); strings.HasSuffix(before, ",") {
				continue
			}
			names = append(names, w)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// checkDashboard fails for any metric the dashboard queries that a scrape
// does not hold.
func checkDashboard(t *testing.T, metrics, path string) {
	exported := map[string]bool{}
	for line := range strings.SplitSeq(metrics, "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			exported[line[:i]] = true
		}
	}
	names := dashboardMetrics(t, path)
	if len(names) < 20 {
		t.Fatalf("%s references only %d metrics: %v", path, len(names), names)
	}
	for _, n := range names {
		if !exported[n] {
			t.Errorf("%s queries %s, which the router does not export", path, n)
		}
	}
}
