package projections

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// Apply folds one event into s and returns it. It mutates s in place: the
// caller owns s and never shares a State that is being applied (readers use
// a Snapshot). A nil s starts from NewState.
//
// Every event advances the log position (when it has one). An event at or
// before the position already applied was folded before (a replay
// overlapping a checkpoint, or a batch read again from its start) and is
// ignored. An unknown kind, a newer
// schema version or an unusable payload is counted in Skipped and changes
// nothing else. Apply never panics on bad input.
func Apply(s *State, ev domain.Event) *State { return apply(s, ev, nil) }

// ApplyReport is Apply that also reports what the event changed in the ban
// table (see Change). It costs what Apply costs when no ban changes.
func ApplyReport(s *State, ev domain.Event) (*State, Change) {
	var ch Change
	s = apply(s, ev, &ch)
	return s, ch
}

// apply is the fold; it records ban changes in ch unless ch is nil.
func apply(s *State, ev domain.Event, ch *Change) *State {
	if s == nil {
		s = NewState()
	}
	if ev.Seq > 0 {
		if !s.pos.Before(ev.Pos()) {
			return s
		}
		s.pos = ev.Pos()
	}
	if !ev.At.IsZero() {
		s.lastAt = ev.At.UTC()
	}
	if err := ev.Valid(); err != nil {
		s.skip(ev)
		return s
	}
	ok := true
	switch ev.Kind {
	case domain.KindOutcomeRecorded:
		ok = s.applyOutcome(*ev.Outcome, ev, ch)
	case domain.KindBanImposed:
		ok = s.applyBan(*ev.Ban, banID(ev), ev.At, ch)
	case domain.KindBanLifted:
		ok = s.applyUnban(*ev.Unban, ev.At, ch)
	case domain.KindCooldownStarted:
		cd := *ev.Cooldown
		if cd.Auth() && cd.Since.IsZero() {
			cd.Since = ev.At.UTC()
		}
		ok = s.applyCooldown(cd)
	case domain.KindCooldownLifted:
		ok = s.applyCooldownLift(*ev.CooldownLift)
	case domain.KindModelBenched:
		ok = s.applyBench(*ev.Bench)
	case domain.KindModelUnbenched:
		ok = s.applyUnbench(*ev.Unbench)
	case domain.KindProbeClaimed:
		ok = s.applyProbe(*ev.Probe, ev.At)
	case domain.KindReplicaHeartbeat:
		// A replica's sign of life changes no routing state: the replicas
		// seen are the consumer's view (package replicas), not the fold's.
	case domain.KindFallbackSettingsChanged:
		settings := *ev.Settings
		s.settings = &settings
	case domain.KindPolicyChanged:
		ok = s.applyPolicy(ev)
	case domain.KindBanWithheld:
		ok = s.applyWithheld(*ev.Withheld)
	case domain.KindBanShadowed:
		ok = s.applyShadow(*ev.Shadowed, banID(ev))
	default:
		ok = false // Valid knows every kind; this keeps the switch honest.
	}
	if !ok {
		s.skipped.Invalid++
	}
	s.reportDrops(ch)
	return s
}

// skip counts an event that Valid rejected.
func (s *State) skip(ev domain.Event) {
	switch {
	case !ev.Kind.Known():
		s.skipped.UnknownKind++
	case ev.V > domain.SchemaVersion:
		s.skipped.NewerVersion++
	default:
		s.skipped.Invalid++
	}
}

// banID is the id a ban is stored under: the event's id, or one derived from
// its log position when the producer gave none.
func banID(ev domain.Event) string {
	if ev.ID != "" || ev.Seq == 0 {
		return ev.ID
	}
	return "seq/" + ev.Pos().String()
}

// applyOutcome folds one upstream attempt. Counters are config-free: every
// non-2xx status code is counted; the policy (and any view that wants to)
// filters by the watched codes.
func (s *State) applyOutcome(o domain.Outcome, ev domain.Event, ch *Change) bool {
	if o.Credential == "" || o.Model == "" || o.Model == domain.AllModels {
		return false
	}
	at := ev.At.UTC()
	c := s.cred(o.Credential)
	p := s.pair(c, o.Model)
	// A ban that has ended is lifted here, as an expiry would: it goes, and
	// so do the counters it covered.
	if c.wild != nil && !c.wild.ban.ActiveAt(at) {
		ch.add(BanExpired, c.wild, "")
		s.liftWildcard(c)
	}
	if p.ban != nil && !p.ban.ban.ActiveAt(at) {
		ch.add(BanExpired, p.ban, "")
		s.liftPair(p)
	}
	if c.wild != nil || p.ban != nil {
		return true // outcomes on a banned pair change nothing
	}
	s.endShadow(p, at)
	switch {
	case o.Success():
		s.resetCounts(p)
		s.resetLadder(p)
		s.clearWindow(o.Model)
	case o.Class == domain.ClassCanceled:
	default:
		if code := o.Code(); code != 0 && (code < 200 || code > 299) {
			s.count(p, code, ev.Pos())
		}
		if o.Class.CountsForBench() {
			mf := domain.ModelFailure{Credential: o.Credential, At: at, Seq: ev.Seq, Index: ev.Index}
			if o.RequestID != "" { // what the bench needs to count a request's failure once
				mf.RequestID, mf.Code, mf.BodyUnsent = o.RequestID, o.Code(), o.BodyUnsent
			}
			s.appendFailure(s.model(o.Model), mf)
		}
	}
	return true
}

// applyBan sets the ban on its key, replacing the ban there, except that a
// manual ban always wins: an automatic ban does not replace a manual one
// still active at the automatic ban's time (at), while a manual ban
// replaces any ban. The same ban (same non-empty id) arriving twice is
// ignored. Counters stay.
func (s *State) applyBan(b domain.Ban, id string, at time.Time, ch *Change) bool {
	if b.Credential == "" {
		return false
	}
	if b.Model == "" {
		b.Model = domain.AllModels // as /api/ban without a model
	}
	c := s.cred(b.Credential)
	if b.Model == domain.AllModels {
		if keeps(c.wild, b, id, at) {
			return true
		}
		c.wild = imposed(c.wild, id, b, at, ch)
		s.touchCred(c)
		s.recapCred(c)
		return true
	}
	p := s.pair(c, b.Model)
	if keeps(p.ban, b, id, at) || s.capRefuses(b, c, p, at) {
		return true
	}
	p.ban = imposed(p.ban, id, b, at, ch)
	s.touchPair(p)
	s.recap(c, p)
	return true
}

// imposed is the record of ban b (stored under id, imposed at at) that
// replaces cur on its key, reporting both.
func imposed(cur *banRec, id string, b domain.Ban, at time.Time, ch *Change) *banRec {
	if cur != nil {
		ch.removed(BanReplaced, cur, at, "")
	}
	r := newBanRec(id, b)
	ch.add(BanImposed, r, "")
	return r
}

// keeps reports whether the ban cur on a key stays when ban b (stored
// under id, imposed at at) arrives for the same key: b is cur again (the
// same non-empty id), or b is automatic and cur is a manual ban still on.
func keeps(cur *banRec, b domain.Ban, id string, at time.Time) bool {
	switch {
	case cur == nil:
		return false
	case id != "" && cur.id == id:
		return true
	default:
		return b.Origin != domain.OriginAdmin && cur.ban.Origin == domain.OriginAdmin && cur.activeAt(nanos(at))
	}
}

// applyUnban lifts bans. An admin lift without a model lifts every ban of
// the credential; with a model only that key ("*" the wildcard). An expiry
// lifts only the ban it names. Lifting resets the lifted pairs' counters;
// lifting the wildcard resets every pair of the credential. The lifts of
// one event are reported ordered by model.
func (s *State) applyUnban(u domain.Unban, at time.Time, ch *Change) bool {
	if u.Credential == "" {
		return false
	}
	switch u.By {
	case domain.LiftedByAdmin:
	case domain.LiftedByExpiry, domain.LiftedByRecovery:
		if u.BanID == "" {
			return false
		}
	default:
		return false
	}
	c := s.creds[u.Credential]
	if c == nil {
		return true // nothing to lift
	}
	match := func(b *banRec) bool {
		if b == nil || (u.By != domain.LiftedByAdmin && b.id != u.BanID) {
			return false
		}
		kind := BanLifted
		if u.By == domain.LiftedByExpiry {
			kind = BanExpired
		}
		ch.removed(kind, b, at, u.By)
		return true
	}
	from := ch.mark()
	if (u.Model == "" || u.Model == domain.AllModels) && match(c.wild) {
		s.liftWildcard(c)
	}
	switch u.Model {
	case "":
		for _, p := range c.pairs {
			if match(p.ban) {
				s.liftPair(p)
			}
		}
		ch.sortFrom(from)
	case domain.AllModels:
	default:
		if p := c.pairs[u.Model]; p != nil && match(p.ban) {
			s.liftPair(p)
		}
	}
	if u.By == domain.LiftedByAdmin && u.Model != domain.AllModels {
		s.clearShadows(c, u.Model)
	}
	return true
}

func (s *State) liftWildcard(c *credRec) {
	c.wild = nil
	s.touchCred(c)
	s.recapCred(c)
	s.resetAllCounts(c)
}

func (s *State) liftPair(p *pairRec) {
	s.used(p)
	p.ban, p.probe = nil, nil
	s.touchPair(p)
	s.recap(s.creds[p.cred], p)
	s.resetCounts(p)
}

// applyCooldown holds a pair back, or with model "*" every model of the
// credential; a cooldown never shortens a longer one. A cooldown of the
// rate-limit ladder records its step on the pair.
func (s *State) applyCooldown(cd domain.Cooldown) bool {
	if cd.Credential == "" || cd.Model == "" {
		return false
	}
	c := s.cred(cd.Credential)
	if cd.Model == domain.AllModels {
		if c.cooldown == nil || cd.Until.After(c.cooldown.cd.Until) {
			c.cooldown = newCooldownRec(cd)
			s.touchCred(c)
		}
		return true
	}
	p := s.pair(c, cd.Model)
	if p.cooldown == nil || cd.Until.After(p.cooldown.cd.Until) {
		p.cooldown = newCooldownRec(cd)
		s.touchPair(p)
	}
	s.climbLadder(p, cd.Step)
	return true
}

// applyBench benches a model (never shortening a longer bench) and starts
// its failure window afresh.
func (s *State) applyBench(b domain.Bench) bool {
	if b.Model == "" || b.Model == domain.AllModels {
		return false
	}
	m := s.model(b.Model)
	if m.bench == nil || b.Until.After(m.bench.bench.Until) {
		m.bench = newBenchRec(b)
		s.touchModel(m)
	}
	s.clearWindow(b.Model)
	return true
}

// applyUnbench lifts a model's bench, whatever its end, and forgets its
// failure window, so only failures after the lift count toward the next
// bench.
func (s *State) applyUnbench(u domain.Unbench) bool {
	if u.Model == "" || u.Model == domain.AllModels || u.By != domain.LiftedByAdmin {
		return false
	}
	m := s.models[u.Model]
	if m == nil {
		return true // nothing to lift
	}
	if m.bench != nil {
		m.bench = nil
		s.touchModel(m)
	}
	s.clearWindow(u.Model)
	return true
}
