package adminapi

import "github.com/airouter/airouter/projections"

// The per-pair parts of /health, one rule each for the document built
// whole (health) and the one written as it walks the pairs
// (writeWholeHealth). Both read each pair into one projections.PairRead
// reused from pair to pair, so neither allocates per pair to read it.

// modelHealth is the entry of the shown pair p whose view is pv, with
// counts as its error counts (the watched codes' counters; nil for none).
func (a *API) modelHealth(p Pair, pv projections.PairView, counts map[string]int) ModelHealth {
	c := a.cf().byName[p.Credential]
	m := ModelHealth{
		Credential: p.Credential, Model: p.Model, IsBanned: pv.Banned,
		Weight:   weight(p.Weight, weight(c.Weight, 1)),
		LimitRPM: limit(p.RPM), LimitTPM: limit(p.TPM),
		ErrorCodeCounts: counts,
		BanOrigin:       pv.BanOrigin, BanReason: pv.BanReason, BanUntil: pv.BanUntil,
		CooldownUntil: pv.CooldownUntil, BenchedUntil: pv.BenchedUntil,
		WouldBan: pv.WouldBan, WouldBanReason: pv.WouldBanReason, WouldBanUntil: pv.WouldBanUntil,
	}
	m.CurrentRPM, m.CurrentTPM = a.usage(p.Credential, p.Model)
	return m
}

// sumBannedCounts adds the watched counts of the shown pair p (read in r)
// to its credential's banned error counts when the pair holds a ban of
// its own: a credential's error counts are the sum over those pairs.
func (a *API) sumBannedCounts(h *Health, p Pair, r *projections.PairRead) {
	if !r.Banned || r.BanModel != p.Model || r.Counts.Len() == 0 {
		return
	}
	ch := h.Credentials[p.Credential]
	for code, n := range r.Counts.All() {
		if a.watches(p.Credential, code) {
			if ch.BannedErrorCounts == nil {
				ch.BannedErrorCounts = map[string]int{}
			}
			// The label is a slice of one string, not a string per pair.
			ch.BannedErrorCounts[a.metrics.status.label(code)] += n
		}
	}
	h.Credentials[p.Credential] = ch
}

// watchedCounts are the counters of counts whose codes Fail2Ban watches
// for the credential, keyed by code; nil when none is.
func (a *API) watchedCounts(cred string, counts projections.CodeCounts) map[string]int {
	return counts.Map(func(code int) bool { return a.watches(cred, code) })
}

// watches reports whether Fail2Ban counts code for the credential: every
// code without a Watched func.
func (a *API) watches(cred string, code int) bool {
	w := a.cf().watched
	return w == nil || w(cred, code)
}
