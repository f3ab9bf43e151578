package adminapi

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/redact"
)

// healthFilter narrows the /health document to the entries an operator
// asks for, so it stays readable (and cheap) on a pool of many pairs:
// ?credential= keeps one credential and its pairs, ?model= the pairs of one
// model (and the credentials holding one), ?banned=true the banned pairs
// and credentials (banned=false the others). Filters combine (all must
// hold). The status and the counts stay those of the whole pool, so a
// filtered read never reports a router healthier or sicker than it is.
type healthFilter struct {
	credential, model string
	// banned is nil for no filter on bans.
	banned *bool
}

// healthParams are the query parameters /health takes.
var healthParams = []string{"at", "credential", "model", "banned"}

// maxFilterLen bounds a filter value; names longer than this match nothing
// a config can hold.
const maxFilterLen = 512

// parseHealthFilter reads the filters of q. An unknown parameter, a
// parameter given twice or an empty or malformed value is a 400 naming it.
func (a *API) parseHealthFilter(q url.Values) (healthFilter, error) {
	var f healthFilter
	for name, vs := range q {
		if !slices.Contains(healthParams, name) {
			return f, badRequest("unknown query parameter %q on /health: it takes %s", clip(name), strings.Join(healthParams, ", "))
		}
		if len(vs) > 1 {
			return f, badRequest("query parameter %s is given %d times on /health: give it once", name, len(vs))
		}
		v := vs[0]
		if name == "at" {
			continue // serveAt reads it
		}
		if strings.TrimSpace(v) == "" || len(v) > maxFilterLen {
			return f, badRequest("query parameter %s on /health is empty or longer than %d characters", name, maxFilterLen)
		}
		switch name {
		case "credential":
			if _, ok := a.cf().byName[v]; !ok {
				return f, badRequest("credential %q in /health?credential= is not configured", redact.String(v))
			}
			f.credential = v
		case "model":
			f.model = v
		case "banned":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return f, badRequest("banned=%q on /health: give true or false", redact.String(clip(v)))
			}
			f.banned = &b
		}
	}
	return f, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func (f healthFilter) on() bool { return f.credential != "" || f.model != "" || f.banned != nil }

// pair reports whether a pair of the credential and model may be shown,
// before its ban is known.
func (f healthFilter) pair(cred, model string) bool {
	return (f.credential == "" || f.credential == cred) && (f.model == "" || f.model == model)
}

// bannedOK reports whether an entry banned or not passes the ban filter.
func (f healthFilter) bannedOK(banned bool) bool { return f.banned == nil || *f.banned == banned }

// apply removes from h the entries f leaves out; h was built with f, so
// its Models already hold only pairs that pass pair. A credential stays
// when it passes the credential filter and, with a model filter, holds a
// shown pair; with a ban filter and no model filter, when it or one of
// its shown pairs passes.
func (f healthFilter) apply(h *Health) {
	if !f.on() {
		return
	}
	for key, m := range h.Models {
		if !f.bannedOK(m.IsBanned) {
			delete(h.Models, key)
		}
	}
	held := map[string]bool{}
	for _, m := range h.Models {
		held[m.Credential] = true
	}
	for name, c := range h.Credentials {
		keep := f.credential == "" || f.credential == name
		switch {
		case f.model != "":
			keep = keep && held[name]
		case f.banned != nil:
			keep = keep && (held[name] || f.bannedOK(c.IsBanned))
		}
		if !keep {
			delete(h.Credentials, name)
		}
	}
	for model := range h.BenchedModels {
		if f.model != "" && f.model != model {
			delete(h.BenchedModels, model)
		}
	}
}

// poolStatus is status over the whole pool for a filtered document: the
// first configured pair not banned makes its credential usable, which
// settles it at the cost of a few pairs; only a pool with every configured
// pair banned pays for counting them all.
func (a *API) poolStatus(h Health, snap *projections.Snapshot, now time.Time) string {
	for _, p := range a.servedPairs() {
		if _, ok := a.cf().byName[p.Credential]; ok && p.Model != "" && p.Model != domain.AllModels && !snap.Pair(p.Key(), now).Banned {
			return a.status(h, map[string]int{p.Credential: 1}, map[string]int{p.Credential: 1})
		}
	}
	pairsOf, openPairs := a.poolPairs(snap, now)
	return a.status(h, pairsOf, openPairs)
}

// poolPairs counts, per credential, the known pairs and those not banned
// at now, over the whole pool (a filtered document is judged on it).
func (a *API) poolPairs(snap *projections.Snapshot, now time.Time) (pairsOf, openPairs map[string]int) {
	pairsOf, openPairs = map[string]int{}, map[string]int{}
	shown, omitted := a.knownPairs(snap, now, healthFilter{})
	for _, p := range shown {
		omitted = append(omitted, p.Key())
	}
	for _, k := range omitted {
		pairsOf[k.Credential]++
		if !snap.Pair(k, now).Banned {
			openPairs[k.Credential]++
		}
	}
	return pairsOf, openPairs
}
