package adminapi

import (
	_ "embed"
	"net/http"
)

// dashboard is the /vhealth page: one self-contained HTML file with its CSS
// and script inline, so it works offline and loads nothing from elsewhere.
// It reads /health (a relative "health") and refreshes itself; ?every=N
// sets the refresh period in seconds (default 10), and R refreshes now. Its
// time control shows any moment the log holds from /health?at=, and its
// strips draw /api/timeline over the last ?hours=N (default 6).
//
//go:embed vhealth.html
var dashboard []byte

// dashboardPolicy allows the page only its own inline style and script and
// requests to its own origin.
const dashboardPolicy = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; " +
	"connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveDashboard answers /vhealth. Like /health it needs no key: it shows
// nothing /health does not.
func serveDashboard(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", dashboardPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(dashboard)
}
