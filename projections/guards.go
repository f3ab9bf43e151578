package projections

import (
	"time"

	"github.com/airouter/airouter/domain"
)

// pairGuards is what the fold keeps of a pair's Fail2Ban guards and of its
// cooldown ladder. Like the ban records it is replaced, never mutated, so
// states and snapshots share it.
type pairGuards struct {
	// withheld is the streak whose ban the ejection cap withheld (the
	// pair's ban.withheld), zero when none; it goes when the streak ends.
	withheld domain.Pos
	// shadow is the ban a shadow rule would have imposed (ban.shadowed).
	// It ends as that ban would have: at its until (the pair's counters
	// are then reset, as a ban's end resets them) or by an admin unban of
	// the pair or its credential.
	shadow *banRec
	// ladder is the rate-limit ladder's last step since the pair's last
	// success (cooldown.started with a step).
	ladder int
}

// setGuards replaces the pair's guards by what edit makes of a copy.
func (s *State) setGuards(p *pairRec, edit func(g *pairGuards)) {
	var g pairGuards
	if p.guards != nil {
		g = *p.guards
	}
	edit(&g)
	if g == (pairGuards{}) {
		p.guards = nil
	} else {
		p.guards = &g
	}
	s.touchPair(p)
}

// forgetWithheld drops the withheld streak when the pair's streak ends.
func (s *State) forgetWithheld(p *pairRec) {
	if p.guards != nil && !p.guards.withheld.IsZero() {
		s.setGuards(p, func(g *pairGuards) { g.withheld = domain.Pos{} })
	}
}

// resetLadder starts the pair's rate-limit ladder again (a success).
func (s *State) resetLadder(p *pairRec) {
	if p.guards != nil && p.guards.ladder != 0 {
		s.setGuards(p, func(g *pairGuards) { g.ladder = 0 })
	}
}

// climbLadder records a ladder step from a cooldown; a step never lowers
// the ladder (an earlier step folded late).
func (s *State) climbLadder(p *pairRec, step int) {
	if step > 0 && (p.guards == nil || p.guards.ladder < step) {
		s.setGuards(p, func(g *pairGuards) { g.ladder = step })
	}
}

// applyWithheld remembers that the ejection cap withheld the ban of the
// pair's current streak, so the same streak is not withheld again. A
// withholding of a streak that has already ended changes nothing.
func (s *State) applyWithheld(w domain.Withheld) bool {
	if w.Credential == "" || w.Model == "" || w.Model == domain.AllModels || w.StreakSeq == 0 {
		return false
	}
	p := s.pair(s.cred(w.Credential), w.Model)
	if p.streak == w.Streak() {
		s.setGuards(p, func(g *pairGuards) { g.withheld = w.Streak() })
	}
	return true
}

// applyShadow sets the pair's shadow ban; the same one (same id) again
// changes nothing.
func (s *State) applyShadow(b domain.Ban, id string) bool {
	if b.Credential == "" || b.Model == "" || b.Model == domain.AllModels {
		return false
	}
	p := s.pair(s.cred(b.Credential), b.Model)
	if g := p.guards; g != nil && g.shadow != nil && id != "" && g.shadow.id == id {
		return true
	}
	r := newBanRec(id, b)
	s.setGuards(p, func(g *pairGuards) { g.shadow = r })
	return true
}

// endShadow drops the pair's shadow ban once it has ended at at, and
// resets the pair's counters as the end of the ban it stands for would.
func (s *State) endShadow(p *pairRec, at time.Time) {
	if g := p.guards; g != nil && g.shadow != nil && !g.shadow.activeAt(nanos(at)) {
		s.setGuards(p, func(g *pairGuards) { g.shadow = nil })
		s.resetCounts(p)
	}
}

// clearShadows drops the shadow bans an admin unban of the credential
// (model "" for every pair, or one model) lifts, resetting the counters of
// those pairs as lifting their ban would.
func (s *State) clearShadows(c *credRec, model string) {
	for m, p := range c.pairs {
		if (model == "" || model == m) && p.guards != nil && p.guards.shadow != nil {
			s.used(p)
			s.setGuards(p, func(g *pairGuards) { g.shadow = nil })
			s.resetCounts(p)
		}
	}
}

// shadowAt is the pair's shadow ban when it holds at t (Unix ns), else nil.
func (p *pairRec) shadowAt(t int64) *banRec {
	if p == nil || p.guards == nil {
		return nil
	}
	return activeBan(p.guards.shadow, t)
}

// modelBans counts the pairs of model the state holds and how many of them
// are banned at t (their own ban or their credential's wildcard ban), for
// the ejection cap. It reads the model's held bans (capcount.go), not its
// pairs.
func (s *State) modelBans(model string, t int64) (pairs, banned int) {
	if m := s.caps[model]; m != nil {
		banned = m.count(t)
	}
	return len(s.pairsOf[model]), banned
}

// indexPair and unindexPair keep pairsOf, and the cap's held bans, as
// records come and go.
func (s *State) indexPair(c *credRec, p *pairRec) {
	m := s.pairsOf[p.model]
	if m == nil {
		m = map[*credRec]*pairRec{}
		s.pairsOf[p.model] = m
	}
	m[c] = p
	s.recap(c, p)
}

func (s *State) unindexPair(c *credRec, p *pairRec) {
	if m := s.pairsOf[p.model]; m[c] == p {
		delete(m, c)
		if len(m) == 0 {
			delete(s.pairsOf, p.model)
		}
		s.recap(c, p)
	}
}

// checkpointGuards is a pair's guards in a checkpoint.
type checkpointGuards struct {
	WithheldSeq   uint64         `json:"withheld_seq,omitempty"`
	WithheldIndex uint32         `json:"withheld_index,omitempty"`
	Shadow        *checkpointBan `json:"shadow,omitempty"`
	Ladder        int            `json:"ladder,omitempty"`
}

func checkpointGuardsOf(g *pairGuards) *checkpointGuards {
	if g == nil {
		return nil
	}
	return &checkpointGuards{WithheldSeq: g.withheld.Seq, WithheldIndex: g.withheld.Index,
		Shadow: checkpointBanOf(g.shadow), Ladder: g.ladder}
}

// rec is the guards a checkpoint holds, nil for none.
func (c *checkpointGuards) rec() *pairGuards {
	if c == nil {
		return nil
	}
	g := pairGuards{withheld: domain.Pos{Seq: c.WithheldSeq, Index: c.WithheldIndex}, ladder: c.Ladder}
	if c.Shadow != nil {
		g.shadow = newBanRec(c.Shadow.ID, c.Shadow.Ban)
	}
	if g == (pairGuards{}) {
		return nil
	}
	return &g
}

// capRefuses reports whether the automatic ban b of pair p (of credential
// c) is not imposed: it carries an ejection cap and the model's bans at its
// arrival leave no room under it (domain.CapWithholds). A ban replacing
// one still on, or on a pair whose credential is banned whole, takes
// nothing more out of rotation and is never refused. The pair's counters
// stay, so its next failure decides again and says it is withheld.
func (s *State) capRefuses(b domain.Ban, c *credRec, p *pairRec, at time.Time) bool {
	if b.Origin == domain.OriginAdmin || b.Cap == 0 {
		return false
	}
	t := nanos(at)
	if p.ban.activeAt(t) || c.wild.activeAt(t) {
		return false
	}
	pairs, banned := s.modelBans(b.Model, t)
	return domain.CapWithholds(b.Cap, banned, pairs)
}
