package adminapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/redact"
)

// fallbackChange is the body of PUT /api/fallback: the settings to change;
// an absent (or null) one keeps its value.
type fallbackChange struct {
	MaxHops             *int            `json:"max_hops"`
	TimeBudget          json.RawMessage `json:"time_budget"`
	ExposeDetailHeaders *bool           `json:"expose_detail_headers"`
}

// fallback handles GET /api/fallback (the settings in force) and PUT
// /api/fallback, which publishes a settings.fallback_changed event so every
// replica agrees, and answers with the new settings once it is applied.
func (a *API) fallback(w http.ResponseWriter, r *http.Request) error {
	if r.Method == http.MethodGet {
		writeJSON(w, http.StatusOK, a.Settings())
		return nil
	}
	var req fallbackChange
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	hasBudget := len(req.TimeBudget) > 0 && string(req.TimeBudget) != "null"
	if req.MaxHops == nil && !hasBudget && req.ExposeDetailHeaders == nil {
		return badRequest("nothing to change: give max_hops, time_budget or expose_detail_headers")
	}
	if req.MaxHops != nil && *req.MaxHops < 1 {
		return badRequest("max_hops %d must be at least 1", *req.MaxHops)
	}
	var budget *time.Duration
	if hasBudget {
		d, err := parseBudget(req.TimeBudget)
		if err != nil {
			return err
		}
		budget = &d
	}

	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	s := a.Settings()
	if req.MaxHops != nil {
		s.MaxHops = *req.MaxHops
	}
	if budget != nil {
		s.TimeBudget = domain.Duration(*budget)
	}
	if req.ExposeDetailHeaders != nil {
		s.ExposeDetailHeaders = *req.ExposeDetailHeaders
	}
	now := a.now().UTC()
	ev := domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindFallbackSettingsChanged, ID: a.newID(), At: now,
		Settings: &s,
	}
	if err := a.commit(r.Context(), ev, "settings change"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s)
	return nil
}

// parseBudget reads time_budget: a Go duration string, 0 or more ("0s"
// means no budget).
func parseBudget(raw json.RawMessage) (time.Duration, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, badRequest(`time_budget must be a Go duration string such as "45s"`)
	}
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, badRequest("time_budget %q is not a Go duration such as \"45s\"", redact.N(s, 64))
	}
	if d < 0 {
		return 0, badRequest("time_budget %q must not be negative (\"0s\" means no budget)", s)
	}
	return d, nil
}
