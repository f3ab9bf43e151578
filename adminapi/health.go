package adminapi

import (
	"net/http"
	"slices"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/redact"
)

// Health is the /health document: the compatible shape of the package doc
// (status, counts, credentials, models keyed "credential:model") plus what
// the log knows: the time it was judged at, cooldowns and benches, and the
// event log's state.
type Health struct {
	// Status is "healthy" while some credential is usable (a known pair
	// of it is not banned, or it has no known pair and no ban), else
	// "unhealthy", answered with 503. A usable router whose event log is
	// down (Log.Connected false, Log.LastError the cause) is "degraded",
	// answered with 200: it routes on its last snapshot, but outcomes only
	// queue and admin changes are refused until the log is back. So is one
	// whose log's store cannot write (Log.StoreFault the cause, a full
	// disk).
	Status string `json:"status"`
	// Time is the moment the document was judged at; the dashboard counts
	// the time left on bans from it.
	Time time.Time `json:"time"`
	// CredentialsAvailable counts credentials with no active ban on any
	// model. Status is judged otherwise: a credential with one model
	// banned is not available, yet still usable.
	CredentialsAvailable int `json:"credentials_available"`
	// BannedPairs counts active bans of configured credentials (a
	// wildcard ban is one), under the document's "credentials_banned".
	BannedPairs      int                              `json:"credentials_banned"`
	TotalCredentials int                              `json:"total_credentials"`
	Credentials      map[string]CredentialHealth      `json:"credentials"`
	Models           map[string]ModelHealth           `json:"models"`
	BenchedModels    map[string]projections.BenchView `json:"benched_models"`
	// ModelsOmitted counts the pairs only the log names that Models
	// leaves out, past maxLogPairs of them (see knownPairs).
	ModelsOmitted int       `json:"models_omitted,omitempty"`
	Log           LogHealth `json:"log"`
	// Policy is the ban policy in force and whether this replica's file
	// differs from it (policyhealth.go).
	Policy *PolicyHealth `json:"policy,omitempty"`
}

// CredentialHealth is one credential in /health. The ban fields describe
// the ban reported for the credential: an admin ban over an automatic one,
// then a permanent over a finite one, then the later end. BanUntil is
// absent for a permanent ban.
type CredentialHealth struct {
	Type       string `json:"type"`
	IsFallback bool   `json:"is_fallback"`
	IsBanned   bool   `json:"is_banned"`
	Weight     int    `json:"weight"`
	CurrentRPM int    `json:"current_rpm"`
	CurrentTPM int    `json:"current_tpm"`
	LimitRPM   int    `json:"limit_rpm"`
	LimitTPM   int    `json:"limit_tpm"`
	// BannedErrorCounts sums, by status code, the watched counters of the
	// credential's pairs that hold a ban of their own.
	BannedErrorCounts map[string]int `json:"banned_error_counts,omitempty"`
	BanOrigin         domain.Origin  `json:"ban_origin,omitempty"`
	BanReason         string         `json:"ban_reason,omitempty"`
	BanUntil          *time.Time     `json:"ban_until,omitempty"`
}

// ModelHealth is one credential+model pair in /health. A credential-wide
// ban marks the pair banned unless the pair's own ban is reported instead.
type ModelHealth struct {
	Credential      string         `json:"credential"`
	Model           string         `json:"model"`
	IsBanned        bool           `json:"is_banned"`
	Weight          int            `json:"weight"`
	CurrentRPM      int            `json:"current_rpm"`
	CurrentTPM      int            `json:"current_tpm"`
	LimitRPM        int            `json:"limit_rpm"`
	LimitTPM        int            `json:"limit_tpm"`
	ErrorCodeCounts map[string]int `json:"error_code_counts,omitempty"`
	BanOrigin       domain.Origin  `json:"ban_origin,omitempty"`
	BanReason       string         `json:"ban_reason,omitempty"`
	BanUntil        *time.Time     `json:"ban_until,omitempty"`
	CooldownUntil   *time.Time     `json:"cooldown_until,omitempty"`
	BenchedUntil    *time.Time     `json:"benched_until,omitempty"`
	// WouldBan is the pair's shadow ban: a rule with enforce: false would
	// have banned it (ban.shadowed), for WouldBanReason, until
	// WouldBanUntil (absent when permanent). The pair is not banned.
	WouldBan       bool       `json:"would_ban,omitempty"`
	WouldBanReason string     `json:"would_ban_reason,omitempty"`
	WouldBanUntil  *time.Time `json:"would_ban_until,omitempty"`
}

// LogHealth is the event log's state as /health shows it.
type LogHealth struct {
	Connected bool `json:"connected"`
	// AppliedSeq is the log position the snapshot reflects; Lag is how
	// many events the stream holds beyond it.
	AppliedSeq  uint64              `json:"applied_seq"`
	LastSeq     uint64              `json:"last_seq"`
	Lag         uint64              `json:"lag"`
	LastEventAt *time.Time          `json:"last_event_at,omitempty"`
	Published   uint64              `json:"published"`
	Dropped     uint64              `json:"dropped"`
	Pending     int                 `json:"pending"`
	Failed      uint64              `json:"failed"`
	Skipped     projections.Skipped `json:"skipped"`
	LastError   string              `json:"last_error,omitempty"`
	// PairsForgotten counts the pair records the log's state forgot while
	// they held failure counts (airouter_pairs_forgotten_total); absent
	// while none was.
	PairsForgotten uint64 `json:"pairs_forgotten,omitempty"`
	// StoreFault names why the store cannot write (a full disk), absent
	// while it writes.
	StoreFault string `json:"store_fault,omitempty"`
	// MissingEvents counts the stream messages the log lost before start
	// (a damaged store: a truncated or corrupt block), from MissingFromSeq
	// on; absent when none is missing.
	MissingEvents  uint64 `json:"missing_events,omitempty"`
	MissingFromSeq uint64 `json:"missing_from_seq,omitempty"`
	// Replicas are the routers heard from in the last 5 minutes, by id;
	// ReplicaConflict says another live process uses this router's id.
	Replicas        []ReplicaHealth `json:"replicas,omitempty"`
	ReplicaConflict string          `json:"replica_conflict,omitempty"`
	// ServerProcess is the embedded server's own process
	// (events.server_process), absent when it runs in the router's.
	ServerProcess *ServerProcessHealth `json:"server_process,omitempty"`
}

// ServerProcessHealth is the event log's server process: its PID (0 while
// none serves, between one's end and the next one's start), and how many
// times it was started again after it exited
// (airouter_log_server_restarts_total).
type ServerProcessHealth struct {
	PID      int    `json:"pid"`
	Restarts uint64 `json:"restarts"`
}

// Health statuses.
const (
	StatusHealthy   = "healthy"
	StatusDegraded  = "degraded"
	StatusUnhealthy = "unhealthy"
)

// serveHealth answers /health, with 503 when no credential is usable;
// with ?at=T, the document as it was at T (serveAt). It needs no key, so
// load balancers and probes can read it.
func (a *API) serveHealth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f, err := a.parseHealthFilter(q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if q.Has("at") {
		// The document as the router served it at that moment, under the
		// same filters.
		q.Del("at")
		path := "/health"
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		if err := a.serveAt(w, r, path); err != nil {
			a.fail(w, r, err)
		}
		return
	}
	if !f.on() {
		a.writeWholeHealth(w, a.current(), a.now().UTC())
		return
	}
	writeHealth(w, a.health(a.current(), a.now().UTC(), f))
}

// writeHealth answers with the document h built whole: 503 when no
// credential is usable.
func writeHealth(w http.ResponseWriter, h Health) {
	status := http.StatusOK
	if h.Status == StatusUnhealthy {
		status = http.StatusServiceUnavailable
	}
	writeJSON(w, status, h)
}

// Health judges the current snapshot now.
func (a *API) Health() Health {
	return a.health(a.current(), a.now().UTC(), healthFilter{})
}

// health judges snap at now, showing the entries f keeps (all for the
// zero filter); the status and counts are the whole pool's.
func (a *API) health(snap *projections.Snapshot, now time.Time, f healthFilter) Health {
	h := a.healthBase(snap, now)
	// A credential is usable when one of its known pairs is not banned, or
	// when it has no known pair and no ban: /health answers 503 only when
	// none is, even though credentials_available counts only credentials
	// without any ban.
	pairsOf, openPairs := map[string]int{}, map[string]int{}
	shown, omitted := a.knownPairs(snap, now, f)
	h.ModelsOmitted = len(omitted)
	for _, k := range omitted {
		pairsOf[k.Credential]++
		if !snap.Pair(k, now).Banned {
			openPairs[k.Credential]++
		}
	}
	var rd projections.PairRead
	for _, p := range shown {
		snap.ReadPair(p.Key(), now, &rd)
		m := a.modelHealth(p, rd.View(), a.watchedCounts(p.Credential, rd.Counts))
		h.Models[p.Credential+":"+p.Model] = m
		pairsOf[p.Credential]++
		if !m.IsBanned {
			openPairs[p.Credential]++
		}
		a.sumBannedCounts(&h, p, &rd)
	}
	if f.on() {
		h.Status = a.poolStatus(h, snap, now)
	} else {
		h.Status = a.status(h, pairsOf, openPairs)
	}
	f.apply(&h)
	return h
}

// healthBase is the document for snap at now without its per-pair entries
// (Models empty, ModelsOmitted 0), its credentials' banned error counts
// and its status: the parts that do not walk every known pair.
func (a *API) healthBase(snap *projections.Snapshot, now time.Time) Health {
	h := Health{
		Time:             now,
		TotalCredentials: len(a.cf().creds),
		Credentials:      make(map[string]CredentialHealth, len(a.cf().creds)),
		Models:           map[string]ModelHealth{},
		BenchedModels:    snap.Benched(now),
		Log:              a.logHealth(snap),
		Policy:           a.policyHealth(snap),
	}
	for _, b := range snap.Bans(now) {
		if _, ok := a.cf().byName[b.Credential]; ok {
			h.BannedPairs++
		}
	}
	a.credentialsHealth(&h, snap, now)
	return h
}

// credentialsHealth fills h's per-credential entries and counts the
// credentials without a credential-wide ban.
func (a *API) credentialsHealth(h *Health, snap *projections.Snapshot, now time.Time) {
	for _, c := range a.cf().creds {
		ch := CredentialHealth{
			Type: string(c.Type), IsFallback: c.IsFallback, Weight: weight(c.Weight, 1),
			LimitRPM: limit(c.RPM), LimitTPM: limit(c.TPM),
		}
		ch.CurrentRPM, ch.CurrentTPM = a.usage(c.Name, "")
		if b, ok := snap.CredentialBan(c.Name, now); ok {
			ch.IsBanned, ch.BanOrigin, ch.BanReason, ch.BanUntil = true, b.Origin, b.Reason, b.Until
		} else {
			h.CredentialsAvailable++
		}
		h.Credentials[c.Name] = ch
	}
}

// status judges h: unhealthy when no credential has an open pair (or, with
// no known pair, no ban); degraded when it can route but the log cannot
// take events, lost some, or its store is full, or another live process
// uses its replica id.
func (a *API) status(h Health, pairsOf, openPairs map[string]int) string {
	for _, c := range a.cf().creds {
		if openPairs[c.Name] > 0 || (pairsOf[c.Name] == 0 && !h.Credentials[c.Name].IsBanned) {
			if (!h.Log.Connected || h.Log.StoreFault != "" || h.Log.MissingEvents > 0 || h.Log.ReplicaConflict != "") && !a.noLog {
				return StatusDegraded
			}
			return StatusHealthy
		}
	}
	return StatusUnhealthy
}

// knownPairs are the configured and learned pairs, then the pairs the log
// names, of configured credentials only, each once, sorted. Of the pairs
// only the log names, maxLogPairs are shown: those holding a ban of their
// own or a cooldown at now first, then the rest by credential and model;
// the others are omitted (in that order). Pairs f leaves out by name are
// neither shown nor omitted.
func (a *API) knownPairs(snap *projections.Snapshot, now time.Time, f healthFilter) (shown []Pair, omitted []domain.Key) {
	cf := a.cf()
	seen := map[domain.Key]bool{} // the learned pairs config does not list
	usable := func(k domain.Key) bool {
		return f.pair(k.Credential, k.Model) && !cf.knownKeys[k] && cf.showable(k) && !seen[k]
	}
	learned := a.learnedPairs(cf)
	if !f.on() { // a filtered document shows few of them
		shown = make([]Pair, 0, len(cf.known)+len(learned)+maxLogPairs)
	}
	for _, p := range cf.known {
		if f.pair(p.Credential, p.Model) {
			shown = append(shown, p)
		}
	}
	for _, p := range learned {
		if usable(p.Key()) {
			seen[p.Key()] = true
			shown = append(shown, p)
		}
	}
	var held, rest []domain.Key
	logged := snap.Pairs
	if f.credential != "" {
		logged = func() []domain.Key { return snap.PairsOf(f.credential) }
	}
	for _, k := range logged() {
		if !usable(k) { // the log names each pair once
			continue
		}
		if snap.Holds(k, now) {
			held = append(held, k)
		} else {
			rest = append(rest, k)
		}
	}
	logPairs := append(held, rest...)
	n := min(len(logPairs), maxLogPairs)
	for _, k := range logPairs[:n] {
		shown = append(shown, Pair{Credential: k.Credential, Model: k.Model})
	}
	slices.SortFunc(shown, func(x, y Pair) int { return x.Key().Compare(y.Key()) })
	return shown, logPairs[n:]
}

func (a *API) logHealth(snap *projections.Snapshot) LogHealth {
	ls := a.logStatus()
	l := LogHealth{
		Connected: ls.Connected, AppliedSeq: snap.Seq(), LastSeq: ls.LastSeq,
		Published: ls.Published, Dropped: ls.Dropped, Failed: ls.Failed, Pending: ls.Pending,
		Skipped: snap.Skipped(), PairsForgotten: snap.PairsForgotten(), LastError: redact.String(ls.LastError),
		StoreFault:    redact.String(ls.StoreFault),
		MissingEvents: ls.MissingEvents, MissingFromSeq: ls.MissingFromSeq,
		Replicas: ls.Replicas, ReplicaConflict: ls.ReplicaConflict,
	}
	if ls.ServerProcess {
		l.ServerProcess = &ServerProcessHealth{PID: ls.ServerPID, Restarts: ls.ServerRestarts}
	}
	if l.LastSeq > l.AppliedSeq {
		l.Lag = l.LastSeq - l.AppliedSeq
	}
	if at := snap.LastEventAt(); !at.IsZero() {
		l.LastEventAt = &at
	}
	return l
}

// weight is w, or def when w is not positive.
func weight(w, def int) int {
	if w > 0 {
		return w
	}
	return def
}

// limit renders a configured limit: -1 for unlimited (0 or negative).
func limit(n int) int {
	if n > 0 {
		return n
	}
	return -1
}
