package adminapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/redact"
)

// banRequest is the body of POST /api/ban. TTL is kept raw so that a
// number gets a message naming the expected form.
type banRequest struct {
	Credential string          `json:"credential"`
	Model      string          `json:"model"`
	TTL        json.RawMessage `json:"ttl"`
	Reason     string          `json:"reason"`
}

// unbanRequest is the body of POST /api/unban.
type unbanRequest struct {
	Credential string `json:"credential"`
	Model      string `json:"model"`
}

// unbanResponse answers POST /api/unban. Model is the one asked for: ""
// lifted every ban of the credential.
type unbanResponse struct {
	Credential string `json:"credential"`
	Model      string `json:"model"`
	Removed    int    `json:"removed"`
}

// bansResponse answers GET /api/bans; Bans is never null.
type bansResponse struct {
	Bans []projections.BanView `json:"bans"`
}

// ban handles POST /api/ban: it publishes a ban.imposed event by an admin
// and answers with the ban once this replica has applied it. A manual ban
// replaces any ban on its key; counters stay.
func (a *API) ban(w http.ResponseWriter, r *http.Request) error {
	var req banRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	cred := strings.TrimSpace(req.Credential)
	if cred == "" {
		return badRequest("credential is required")
	}
	ttl, err := parseTTL(req.TTL)
	if err != nil {
		return err
	}
	c, ok := a.cf().byName[cred]
	if !ok {
		return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf("unknown credential %q", cred)}
	}
	model := strings.TrimSpace(req.Model)
	if err := domain.CheckModelName(model); err != nil {
		return badRequest("model %s", err)
	}
	if model == "" {
		model = domain.AllModels
	}
	if !a.serves(c, model) {
		return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf(
			"credential %q does not serve model %q: the model is not configured for it, not learned from its upstream and not named in the log for it",
			cred, redact.N(model, 64))}
	}

	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	now := a.now().UTC()
	b := domain.Ban{
		Credential: cred,
		Model:      model,
		Origin:     domain.OriginAdmin,
		Reason:     adminReason(req.Reason),
		Since:      now,
		Permanent:  ttl == 0,
	}
	if ttl > 0 {
		until := now.Add(ttl)
		b.Until = &until
	}
	ev := domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanImposed, ID: a.newID(), At: now, Ban: &b}
	if err := a.commit(r.Context(), ev, "ban"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, banView(b))
	return nil
}

// serves reports whether an admin ban may name model on credential c: the
// wildcard, a proxy credential (it relays whatever its upstream serves, and
// may learn more), a configured pair, a model its upstream taught it, or a
// pair the log names (a model it was asked for, or one holding a ban; at
// 2,000 records of a credential, the log drops the least recently used
// pairs that hold no state: projections.Snapshot.Named). So bans cannot
// add metric series and /health entries for names nothing uses.
func (a *API) serves(c Credential, model string) bool {
	if model == domain.AllModels || c.Type == domain.CredentialProxy {
		return true
	}
	for _, p := range a.cf().configured {
		if p.Credential == c.Name && p.Model == model {
			return true
		}
	}
	if a.traffic != nil && slices.Contains(a.traffic.Learned()[c.Name], model) {
		return true
	}
	return a.current().Named(domain.Key{Credential: c.Name, Model: model})
}

// unban handles POST /api/unban: it publishes a ban.lifted event by an
// admin and answers, once it is applied, with how many active bans it
// lifted (as this replica saw them just before). It is idempotent.
func (a *API) unban(w http.ResponseWriter, r *http.Request) error {
	var req unbanRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	cred := strings.TrimSpace(req.Credential)
	if cred == "" {
		return badRequest("credential is required")
	}
	model := strings.TrimSpace(req.Model)
	if err := domain.CheckModelName(model); err != nil {
		return badRequest("model %s", err)
	}

	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	now := a.now().UTC()
	snap := a.current()
	_, configured := a.cf().byName[cred]
	_, banned := snap.CredentialBan(cred, now)
	if !configured && !banned {
		// A credential dropped from config may still hold bans in the
		// log; it can be unbanned, but nothing else unknown can.
		return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf("unknown credential %q", cred)}
	}
	removed := 0
	for _, b := range snap.Bans(now) {
		if b.Credential == cred && (model == "" || b.Model == model) {
			removed++
		}
	}
	ev := domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindBanLifted, ID: a.newID(), At: now,
		Unban: &domain.Unban{Credential: cred, Model: model, By: domain.LiftedByAdmin},
	}
	if err := a.commit(r.Context(), ev, "unban"); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, unbanResponse{Credential: cred, Model: model, Removed: removed})
	return nil
}

// listBans handles GET /api/bans: the bans active now, by credential then
// model; with ?at=T, those active at T (serveAt).
func (a *API) listBans(w http.ResponseWriter, r *http.Request) error {
	if err := onlyParams(r.URL.Query(), "/api/bans", []string{"at"}, []string{"at"}); err != nil {
		return err
	}
	if r.URL.Query().Has("at") {
		return a.serveAt(w, r, "/api/bans")
	}
	writeJSON(w, http.StatusOK, bansResponse{Bans: a.current().Bans(a.now())})
	return nil
}

// commit publishes an admin change and waits until this replica has
// applied it, so the next read or routing decision here sees it. When the
// log does not take the event nothing has changed, and the answer is 503
// naming the cause.
func (a *API) commit(ctx context.Context, ev domain.Event, what string) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	seq, err := a.publish(ctx, ev)
	if err != nil {
		cause := redact.String(err.Error())
		a.log.Error("admin change not recorded: the event log did not take it", "change", what, "error", cause)
		return &httpError{status: http.StatusServiceUnavailable,
			msg: fmt.Sprintf("the %s was not recorded, nothing changed: the event log did not take it: %s", what, cause)}
	}
	if err := a.waitFor(ctx, seq); err != nil {
		cause := redact.String(err.Error())
		a.log.Error("admin change recorded but not applied in time", "change", what, "seq", seq, "error", cause)
		return &httpError{status: http.StatusServiceUnavailable,
			msg: fmt.Sprintf("the %s is recorded at log position %d but not applied yet: %s", what, seq, cause)}
	}
	return nil
}

// parseTTL reads a ban's ttl: absent or null is a permanent ban (0);
// otherwise a positive Go duration string.
func parseTTL(raw json.RawMessage) (time.Duration, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, badRequest(`ttl must be a Go duration string such as "30m" or "1h30m"`)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, badRequest("ttl is empty: give a positive Go duration such as \"30m\", or leave ttl out for a ban that lasts until unbanned")
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, badRequest("ttl %q is not a Go duration such as \"30m\" or \"1h30m\"", redact.N(s, 64))
	}
	if d <= 0 {
		return 0, badRequest("ttl %q must be positive; leave ttl out for a ban that lasts until unbanned", s)
	}
	return d, nil
}

// adminReason stores an operator's reason as "admin: <reason>": "admin"
// when empty, unchanged when it already starts with "admin:". It is
// redacted like any text that may carry a secret.
func adminReason(reason string) string {
	r := redact.String(strings.TrimSpace(reason))
	switch {
	case r == "":
		return "admin"
	case strings.HasPrefix(r, "admin:"):
		return r
	}
	return "admin: " + r
}

// banView renders a ban as /api/ban and /api/bans show it.
func banView(b domain.Ban) projections.BanView {
	v := projections.BanView{
		Credential: b.Credential, Model: b.Model, Origin: b.Origin, Reason: b.Reason,
		ErrorCode: b.ErrorCode, Since: b.Since, Permanent: b.Permanent || b.Until == nil,
	}
	if !v.Permanent {
		u := *b.Until
		v.Until = &u
	}
	return v
}
