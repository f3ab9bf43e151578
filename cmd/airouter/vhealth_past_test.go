package main

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/airouter/airouter/internal/testkit"
)

// stripView is what the dashboard's timeline and cards show, read from the
// DOM.
type stripView struct {
	At    string            `json:"at"`
	Cards map[string]string `json:"cards"`
	Bars  []struct {
		Credential string  `json:"credential"`
		Kind       string  `json:"kind"`
		Origin     string  `json:"origin"`
		Title      string  `json:"title"`
		Left       float64 `json:"left"`
		Color      string  `json:"color"`
	} `json:"bars"`
	Warn string `json:"warn"`
	Err  string `json:"err"`
}

const readStrips = `(() => {
  const color = (v) => { const p = document.createElement("span"); p.style.color = v; document.body.append(p);
    const c = getComputedStyle(p).color; p.remove(); return c; };
  const v = { at: document.body.dataset.at || "", cards: {}, bars: [], warn: color("var(--warn)"), err: color("var(--err)") };
  for (const c of document.querySelectorAll(".card")) v.cards[c.dataset.credential] = c.className;
  for (const b of document.querySelectorAll(".strip .bar")) {
    const track = b.parentElement.getBoundingClientRect(), r = b.getBoundingClientRect();
    v.bars.push({ credential: b.closest(".strip").dataset.credential, kind: b.dataset.kind, origin: b.dataset.origin || "",
      title: b.title, left: (r.left - track.left) / track.width, color: getComputedStyle(b).backgroundColor });
  }
  return v;
})()`

// The dashboard travels in time: moved to a moment before the ban (by the
// slider, then by the datetime input) it shows the credential usable, back
// to now it shows it banned, and the timeline draws the automatic and the
// manual ban in their colours where they began, the reason on hover.
func TestDashboardTravelsInTime(t *testing.T) {
	ctx := testkit.Browser(t)
	r, clock := bannedAnHourIn(t)
	clock.Advance(30 * time.Minute)
	if status, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-b", "ttl": "2h", "reason": "key rotation"}); status != 200 {
		t.Fatalf("/api/ban = %d %s", status, body)
	}
	clock.Advance(30 * time.Minute) // now: t0+2h; the window runs from the first event, t0
	settle(t, r)

	if err := chromedp.Do(ctx, chromedp.Navigate(r.url+"/vhealth?every=1")); err != nil {
		t.Fatalf("open /vhealth: %v", err)
	}
	act := func(js string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
			t.Fatalf("%s: %v", js, err)
		}
	}
	wait := func(what, cond string) stripView {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := chromedp.Run(wctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			v, _ := chromedp.Run(ctx, chromedp.Evaluate[stripView](readStrips))
			t.Fatalf("waiting for %s: %v; the page shows %+v", what, err, v)
		}
		v, err := chromedp.Run(ctx, chromedp.Evaluate[stripView](readStrips))
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		return v
	}
	v := wait("the live page with its timeline", `Number(document.body.dataset.timelines || 0) >= 1 && document.body.dataset.at === "now"`)
	if !strings.Contains(v.Cards["cred-a"], "auto") || !strings.Contains(v.Cards["cred-b"], "admin") {
		t.Fatalf("now, the cards are %v", v.Cards)
	}
	var auto, manual bool
	for _, bar := range v.Bars {
		switch {
		case bar.Credential == "cred-a" && bar.Kind == "ban":
			auto = true
			if bar.Origin != "fail2ban" || !strings.Contains(bar.Title, "3 x 429") || math.Abs(bar.Left-0.5) > 0.01 || bar.Color == "" || !sameColour(bar.Color, v.Err) {
				t.Errorf("the fail2ban bar: %+v, want it at 50%% of the strip in %s", bar, v.Err)
			}
		case bar.Credential == "cred-b" && bar.Kind == "ban":
			manual = true
			if bar.Origin != "admin" || !strings.Contains(bar.Title, "admin: key rotation") || math.Abs(bar.Left-0.75) > 0.01 || !sameColour(bar.Color, v.Warn) {
				t.Errorf("the admin bar: %+v, want it at 75%% of the strip in %s", bar, v.Warn)
			}
		}
	}
	if !auto || !manual {
		t.Fatalf("the timeline lacks a ban bar: %+v", v.Bars)
	}
	testkit.Screenshot(t, ctx, "vhealth-timeline.png")

	// The slider at a quarter of the window: t0+30m, before either ban.
	before := pastT0.Add(30 * time.Minute).Format(time.RFC3339)
	act(`(() => { const s = document.getElementById("slider"); s.value = "250"; s.dispatchEvent(new Event("change")); return true; })()`)
	v = wait("the moment before the ban", fmt.Sprintf(`document.body.dataset.at === %q`, before))
	if !strings.Contains(v.Cards["cred-a"], "ok") || !strings.Contains(v.Cards["cred-b"], "ok") {
		t.Fatalf("at %s the cards are %v, want both usable", before, v.Cards)
	}
	testkit.Screenshot(t, ctx, "vhealth-past.png")

	act(`(() => { document.getElementById("now").click(); return true; })()`)
	v = wait("now again", `document.body.dataset.at === "now"`)
	if !strings.Contains(v.Cards["cred-a"], "auto") {
		t.Fatalf("now, cred-a's card is %q", v.Cards["cred-a"])
	}

	// The datetime input (the browser's zone is UTC): t0+1h15m, after the
	// Fail2Ban ban began (t0+1h) and before the admin ban (t0+1h30m).
	mid := pastT0.Add(75 * time.Minute)
	act(fmt.Sprintf(`(() => { const i = document.getElementById("at"); i.value = %q; i.dispatchEvent(new Event("change")); return true; })()`,
		mid.Format("2006-01-02T15:04:05")))
	v = wait("the moment typed in", fmt.Sprintf(`document.body.dataset.at === %q`, mid.Format(time.RFC3339)))
	if !strings.Contains(v.Cards["cred-a"], "auto") || !strings.Contains(v.Cards["cred-b"], "ok") {
		t.Fatalf("at %s the cards are %v, want cred-a banned and cred-b usable", mid, v.Cards)
	}

	// A moment before the log's first event: the page says how far back
	// the log goes and keeps the last state.
	act(fmt.Sprintf(`(() => { const i = document.getElementById("at"); i.value = %q; i.dispatchEvent(new Event("change")); return true; })()`,
		pastT0.Add(-time.Hour).Format("2006-01-02T15:04:05")))
	wait("the answer for a moment the log does not hold", `!document.getElementById("problem").hidden &&
		document.getElementById("problem").textContent.includes("the earliest moment it can answer for is 2026-11-29T09:00:00")`)
}

// sameColour compares a computed background colour ("rgba(r, g, b, a)")
// with a computed text colour ("rgb(r, g, b)") by their channels.
func sameColour(bg, fg string) bool {
	channels := func(c string) string {
		c = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(c, "rgba("), "rgb("), ")")
		parts := strings.Split(c, ",")
		if len(parts) > 3 {
			parts = parts[:3]
		}
		return strings.Join(parts, ",")
	}
	return channels(bg) == channels(fg)
}
