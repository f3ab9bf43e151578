package adminapi

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/airouter/airouter/internal/testkit"
)

// browser is a headless chromium tab of the test's own (testkit.Browser).
func browser(t testing.TB) context.Context { return testkit.Browser(t) }

// pageView is what the dashboard shows, read from the DOM.
type pageView struct {
	Status string            `json:"status"`
	Tiles  map[string]string `json:"tiles"`
	Cards  map[string]struct {
		Class      string   `json:"class"`
		Badge      string   `json:"badge"`
		BadgeColor string   `json:"badgeColor"`
		Border     string   `json:"border"`
		Reason     string   `json:"reason"`
		Until      string   `json:"until"`
		Errors     []string `json:"errors"`
	} `json:"cards"`
	Rows map[string]struct {
		Badge string `json:"badge"`
		Title string `json:"title"`
		Color string `json:"color"`
	} `json:"rows"`
	Warn    string `json:"warn"`
	Err     string `json:"err"`
	Renders int    `json:"renders"`
}

const readPage = `(() => {
  const text = (root, sel) => { const e = root.querySelector(sel); return e ? e.textContent : ""; };
  const color = (v) => { const p = document.createElement("span"); p.style.color = v; document.body.append(p);
    const c = getComputedStyle(p).color; p.remove(); return c; };
  const v = { status: text(document, "#status"), tiles: {}, cards: {}, rows: {},
    warn: color("var(--warn)"), err: color("var(--err)"), renders: Number(document.body.dataset.renders || 0) };
  for (const id of ["available", "banned", "admin", "total", "pairs", "benched", "lag"]) v.tiles[id] = text(document, "#tile-" + id + " .num");
  for (const c of document.querySelectorAll(".card")) {
    const badge = c.querySelector(".card-head .badge:last-child");
    v.cards[c.dataset.credential] = { class: c.className, badge: badge.textContent, badgeColor: getComputedStyle(badge).color,
      border: getComputedStyle(c).borderLeftColor, reason: text(c, ".reason"), until: text(c, ".until"),
      errors: [...c.querySelectorAll(".errors .code")].map(e => e.textContent) };
  }
  for (const tr of document.querySelectorAll("#models tbody tr[data-key]")) {
    const b = tr.querySelector(".badge");
    v.rows[tr.dataset.key] = { badge: b.textContent, title: b.title, color: getComputedStyle(b).color };
  }
  return v;
})()`

func TestDashboardInABrowser(t *testing.T) {
	ctx := browser(t)
	r := newRig(t)
	r.admin("POST", "/api/ban", `{"credential":"openai-1","ttl":"30m","reason":"air-scaler drain"}`, 200)
	r.failures("openai-2", "gpt-4o", 429, 3, 2*time.Hour)

	requested := recordRequests(t, ctx)
	if err := chromedp.Do(ctx, chromedp.Navigate(r.srv.URL+"/vhealth?every=1")); err != nil {
		t.Fatalf("open /vhealth: %v", err)
	}
	wait := func(cond string) pageView {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := chromedp.Run(wctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			v, _ := chromedp.Run(ctx, chromedp.Evaluate[pageView](readPage))
			t.Fatalf("waiting for %s: %v; the page shows %+v", cond, err, v)
		}
		v, err := chromedp.Run(ctx, chromedp.Evaluate[pageView](readPage))
		if err != nil {
			t.Fatalf("read the page: %v", err)
		}
		return v
	}
	v := wait(`Number(document.body.dataset.renders || 0) >= 1`)
	screenshot(t, ctx, "vhealth-bans.png")

	if v.Status != "healthy" {
		t.Errorf("status %q", v.Status)
	}
	if v.Tiles["available"] != "2" || v.Tiles["banned"] != "2" || v.Tiles["admin"] != "1" || v.Tiles["total"] != "4" || v.Tiles["pairs"] != "2" {
		t.Errorf("overview tiles: %v", v.Tiles)
	}
	if v.Warn == v.Err || v.Warn == "" {
		t.Fatalf("warning and error colours are not distinct: %q %q", v.Warn, v.Err)
	}
	admin := v.Cards["openai-1"]
	if !strings.Contains(admin.Class, "admin") || admin.Badge != "banned · admin" || admin.Reason != "admin: air-scaler drain" ||
		admin.Until != "until 17:29 · 30m left" || len(admin.Errors) != 0 {
		t.Errorf("admin card: %+v", admin)
	}
	if admin.Border != v.Warn || admin.BadgeColor != v.Warn {
		t.Errorf("admin card colours %s/%s, want the warning colour %s", admin.Border, admin.BadgeColor, v.Warn)
	}
	auto := v.Cards["openai-2"]
	if !strings.Contains(auto.Class, "auto") || auto.Badge != "banned · fail2ban" || !strings.HasPrefix(auto.Reason, "3 x 429") ||
		auto.Until != "until 18:59 · 2h left" || strings.Join(auto.Errors, ",") != "429 × 3" {
		t.Errorf("automatic card: %+v", auto)
	}
	if auto.Border != v.Err || auto.BadgeColor != v.Err {
		t.Errorf("automatic card colours %s/%s, want the error colour %s", auto.Border, auto.BadgeColor, v.Err)
	}
	if c := v.Cards["claude-1"]; c.Badge != "available" || c.Reason != "" {
		t.Errorf("available card: %+v", c)
	}
	row := v.Rows["openai-1:gpt-4o-mini"]
	if row.Badge != "banned · admin" || row.Title != "admin: air-scaler drain — until 17:29 · 30m left" || row.Color != v.Warn {
		t.Errorf("admin row: %+v", row)
	}
	row = v.Rows["openai-2:gpt-4o"]
	if row.Badge != "banned" || !strings.HasPrefix(row.Title, "3 x 429") || !strings.HasSuffix(row.Title, "until 18:59 · 2h left") || row.Color != v.Err {
		t.Errorf("automatic row: %+v", row)
	}
	if row := v.Rows["relay:gpt-4o"]; row.Badge != "ok" || row.Title != "" {
		t.Errorf("available row: %+v", row)
	}

	// The page refreshes itself: lift the admin ban and make a permanent
	// one, and it shows both without a reload.
	r.admin("POST", "/api/unban", `{"credential":"openai-1"}`, 200)
	r.admin("POST", "/api/ban", `{"credential":"claude-1","reason":"key rotation"}`, 200)
	v = wait(`document.querySelector('.card[data-credential="claude-1"] .until')?.textContent === "until unban" &&
		document.querySelector('.card[data-credential="openai-1"]')?.classList.contains("ok")`)
	if c := v.Cards["claude-1"]; c.Badge != "banned · admin" || c.Reason != "admin: key rotation" {
		t.Errorf("permanent admin card: %+v", c)
	}
	if v.Tiles["admin"] != "1" || v.Tiles["available"] != "2" {
		t.Errorf("tiles after the changes: %v", v.Tiles)
	}
	screenshot(t, ctx, "vhealth-after.png")

	for _, u := range requested.all() {
		if !strings.HasPrefix(u, r.srv.URL+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page requested %s: it must load nothing from elsewhere", u)
		}
	}
}

// requestLog holds the URL of every request a browser tab sent.
type requestLog struct {
	mu   sync.Mutex
	urls []string
}

// recordRequests records the requests the browser tab ctx sends from now on.
func recordRequests(t *testing.T, ctx context.Context) *requestLog {
	t.Helper()
	l := &requestLog{}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			l.mu.Lock()
			l.urls = append(l.urls, e.Request.URL)
			l.mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	return l
}

// all is the URLs requested so far, in order.
func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.urls)
}

// screenshot saves the page for a person to look at (testkit.Screenshot).
func screenshot(t *testing.T, ctx context.Context, name string) { testkit.Screenshot(t, ctx, name) }

func TestDashboardIsSelfContained(t *testing.T) {
	r := newRig(t)
	status, h, body := r.do("GET", "/vhealth", "", "")
	if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
		t.Fatalf("/vhealth: %d %s", status, h.Get("Content-Type"))
	}
	if !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("CSP %q", h.Get("Content-Security-Policy"))
	}
	for _, ref := range []string{"http://", "https://", "//cdn", "<link rel=\"stylesheet\"", "<script src"} {
		if strings.Contains(body, ref) {
			t.Errorf("the page refers to %q: it must work offline", ref)
		}
	}
	if !bytes.Equal([]byte(body), dashboard) || !strings.Contains(body, `: "health";`) ||
		!strings.Contains(body, `"health?at="`) || !strings.Contains(body, `fetch("api/timeline?since="`) {
		t.Error("the page does not read /health, /health?at= and /api/timeline by relative paths")
	}
}

// openDashboard opens url in the browser and reads the page once it has
// rendered.
func openDashboard(t *testing.T, ctx context.Context, url string) pageView {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
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
	return v
}
