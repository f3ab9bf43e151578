package projections

import (
	"slices"
	"sort"
	"time"

	"github.com/airouter/airouter/domain"
)

// The snapshot's queries: the bans, pairs, benches and names it holds, judged
// at the reader's now, and the row types they return (also the rows of a
// StateView).

// BanView is one ban as /api/bans lists it. Model "*" covers every model of
// the credential; Until is absent for a permanent ban.
type BanView struct {
	Credential string        `json:"credential"`
	Model      string        `json:"model"`
	Origin     domain.Origin `json:"origin"`
	Reason     string        `json:"reason,omitempty"`
	ErrorCode  int           `json:"error_code"`
	Since      time.Time     `json:"since"`
	Permanent  bool          `json:"permanent"`
	Until      *time.Time    `json:"until,omitempty"`
}

// PairView is what the log says about one credential+model pair at a
// moment. The counters are every non-2xx status counted since the last
// reset; a view that wants only the watched codes filters them. The ban is
// the one reported for the model: its own ban wins over the credential's
// wildcard ban.
type PairView struct {
	Credential      string         `json:"credential"`
	Model           string         `json:"model"`
	ErrorCodeCounts map[string]int `json:"error_code_counts,omitempty"`
	Banned          bool           `json:"banned"`
	// BanModel is the model of the reported ban: Model, or "*" when the
	// credential's wildcard ban is the one reported.
	BanModel      string        `json:"ban_model,omitempty"`
	BanOrigin     domain.Origin `json:"ban_origin,omitempty"`
	BanReason     string        `json:"ban_reason,omitempty"`
	BanErrorCode  int           `json:"ban_error_code,omitempty"`
	BanPermanent  bool          `json:"ban_permanent,omitempty"`
	BanUntil      *time.Time    `json:"ban_until,omitempty"`
	CooldownUntil *time.Time    `json:"cooldown_until,omitempty"`
	BenchedUntil  *time.Time    `json:"benched_until,omitempty"`
	// WouldBan is the pair's shadow ban at the moment: a rule with
	// enforce: false would have banned it, with WouldBanReason, until
	// WouldBanUntil (absent for a permanent one).
	WouldBan       bool       `json:"would_ban,omitempty"`
	WouldBanReason string     `json:"would_ban_reason,omitempty"`
	WouldBanUntil  *time.Time `json:"would_ban_until,omitempty"`
	// Probe is the open recovery probe claim of the pair's automatic ban.
	Probe *ProbeView `json:"probe,omitempty"`
}

// BenchView is one benched model.
type BenchView struct {
	Until       time.Time `json:"until"`
	Failures    int       `json:"failures"`
	Reason      string    `json:"reason"`
	Credentials []string  `json:"credentials,omitempty"`
}

func banView(b *banRec) BanView {
	v := BanView{
		Credential: b.ban.Credential, Model: b.ban.Model, Origin: b.ban.Origin,
		Reason: b.ban.Reason, ErrorCode: b.ban.ErrorCode, Since: b.ban.Since,
		Permanent: b.perm,
	}
	if !b.perm {
		u := *b.ban.Until
		v.Until = &u
	}
	return v
}

// Bans lists the bans active at now, ordered by credential then model.
func (s *Snapshot) Bans(now time.Time) []BanView {
	t := nanos(now)
	out := []BanView{}
	for c := range values(s.creds) {
		if c.wild.activeAt(t) {
			out = append(out, banView(c.wild))
		}
		for p := range values(c.pairs) {
			if b := p.ban; b.activeAt(t) {
				out = append(out, banView(b))
			}
		}
	}
	return out
}

// CredentialBan is the ban reported for a credential at now: among its
// active bans (wildcard and per model), an admin ban beats an automatic
// one, then a permanent ban beats a finite one, then the later end wins.
func (s *Snapshot) CredentialBan(credential string, now time.Time) (BanView, bool) {
	c := lookup(s.creds, credential)
	if c == nil {
		return BanView{}, false
	}
	t := nanos(now)
	best := activeBan(c.wild, t)
	for p := range values(c.pairs) {
		if b := activeBan(p.ban, t); b != nil && reportedOver(b, best) {
			best = b
		}
	}
	if best == nil {
		return BanView{}, false
	}
	return banView(best), true
}

// reportedOver reports whether a is reported in preference to b.
func reportedOver(a, b *banRec) bool {
	if b == nil {
		return true
	}
	if aa, ba := a.ban.Origin == domain.OriginAdmin, b.ban.Origin == domain.OriginAdmin; aa != ba {
		return aa
	}
	if a.perm != b.perm {
		return a.perm
	}
	return !a.perm && a.until > b.until
}

// Pair is the view of one pair at now: ReadPair's, with its own counts
// and times. A pair the log never named still shows its credential's
// wildcard ban and its model's bench.
func (s *Snapshot) Pair(key domain.Key, now time.Time) PairView {
	var r PairRead
	s.readPair(key, now, &r)
	v := r.View()
	v.ErrorCodeCounts = r.Counts.Map(nil)
	return v
}

// Benched lists the models benched at now.
func (s *Snapshot) Benched(now time.Time) map[string]BenchView {
	t := nanos(now)
	out := map[string]BenchView{}
	for m := range values(s.models) {
		if m.bench != nil && m.bench.until > t {
			b := m.bench.bench
			out[m.name] = BenchView{Until: b.Until, Failures: b.Failures, Reason: b.Reason, Credentials: slices.Clone(b.Credentials)}
		}
	}
	return out
}

// Pairs lists every pair the log has named and keeps a record of (see
// maxPairs), ordered by credential then model.
func (s *Snapshot) Pairs() []domain.Key {
	n := 0
	for c := range values(s.creds) {
		n += size(c.pairs)
	}
	out := make([]domain.Key, 0, n)
	for c := range values(s.creds) {
		for p := range values(c.pairs) {
			out = append(out, domain.Key{Credential: c.name, Model: p.model})
		}
	}
	return out
}

// Named reports whether the log has named the pair (an outcome, a ban or
// a cooldown on it) and keeps its record, without listing every pair: at
// maxPairs records of its credential, the least recently used pairs that
// hold no state are no longer named.
func (s *Snapshot) Named(key domain.Key) bool {
	c := lookup(s.creds, key.Credential)
	return c != nil && lookup(c.pairs, key.Model) != nil
}

// Credentials lists every credential the log has named, sorted.
func (s *Snapshot) Credentials() []string {
	out := make([]string, 0, size(s.creds))
	for c := range values(s.creds) {
		out = append(out, c.name)
	}
	return out
}

// ModelFailures is the model's window of bench-countable failures, oldest
// first.
func (s *Snapshot) ModelFailures(model string) []domain.ModelFailure {
	if m := lookup(s.models, model); m != nil {
		return slices.Clone(m.window)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
