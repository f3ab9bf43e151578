package domain

import "fmt"

// The guards on Fail2Ban's bans: shadow rules (enforce: false), which
// publish the ban they would impose and ban nothing, and the ejection cap
// (max_ejection_percent), which withholds a ban that would leave too much
// of a model banned. Both decide from the policy and the Facts alone, like
// every rule of Decide.

// Shadowed reports whether a ban of the credential for the status code is
// a shadow ban: the credential's override has enforce: false as a whole,
// or the rule that applies (BanPolicy.RuleFor) has.
func (p BanPolicy) Shadowed(credential string, code int) bool {
	if o, ok := p.Credentials[credential]; ok && o.Shadow {
		return true
	}
	return p.RuleFor(credential, code).Shadow
}

// Capped reports whether the policy has an ejection cap (1..99).
func (p BanPolicy) Capped() bool { return p.MaxEjectionPercent > 0 && p.MaxEjectionPercent < 100 }

// capWithholds reports whether the ejection cap withholds one more ban on
// the outcome's model (CapWithholds).
func (p BanPolicy) capWithholds(f Facts) bool {
	return CapWithholds(p.MaxEjectionPercent, f.ModelBanned, f.ModelPairs)
}

// CapWithholds is the ejection cap's rule: under a cap of 1..99 percent,
// one more automatic ban on a model of which banned of pairs are banned is
// withheld when it would leave more than cap percent of them banned, or
// every one of them (a model with one pair keeps it). Any other cap is no
// cap. Decide applies it to the facts at the outcome; the fold applies it
// again to a ban that carries its cap (Ban.Cap) when the ban arrives, so
// bans decided at once on several pairs, each before the others were
// folded, never pass the cap together.
func CapWithholds(cap, banned, pairs int) bool {
	if cap <= 0 || cap >= 100 {
		return false
	}
	after := banned + 1
	return after >= pairs || after*100 > cap*pairs
}

// shadowBan publishes the ban a shadow rule decided as ban.shadowed, once
// per streak and not while the pair's shadow ban holds. Its id names the
// streak as the ban's would.
func shadowBan(ban *Ban, ev Event, f Facts) (Event, bool) {
	if f.WouldBan {
		return Event{}, false
	}
	return Event{
		V:        SchemaVersion,
		Kind:     KindBanShadowed,
		ID:       decisionID("shadow", ban.Credential, ban.Model, f.Streak),
		At:       ban.Since,
		Shadowed: ban,
	}, true
}

// withheldBan publishes that the ejection cap withheld ban, once per
// streak (the id names it; the fold remembers it, see Facts.Withheld).
func withheldBan(p BanPolicy, ban *Ban, ev Event, f Facts) (Event, bool) {
	if f.Withheld == f.Streak {
		return Event{}, false
	}
	return Event{
		V:    SchemaVersion,
		Kind: KindBanWithheld,
		ID:   decisionID("withheld", ban.Credential, ban.Model, f.Streak),
		At:   ban.Since,
		Withheld: &Withheld{
			Credential: ban.Credential,
			Model:      ban.Model,
			ErrorCode:  ban.ErrorCode,
			Rule:       ban.Reason,
			Reason: fmt.Sprintf("ejection cap %d%%: %d of %d pairs of %s are banned; banning this one would leave %d%%",
				p.MaxEjectionPercent, f.ModelBanned, f.ModelPairs, ban.Model, (f.ModelBanned+1)*100/f.ModelPairs),
			Cap:         p.MaxEjectionPercent,
			Banned:      f.ModelBanned,
			Pairs:       f.ModelPairs,
			Failures:    ban.Failures,
			StreakSeq:   f.Streak.Seq,
			StreakIndex: f.Streak.Index,
			CauseSeq:    ev.Seq,
			CauseIndex:  ev.Index,
		},
	}, true
}

// capOf is the cap an automatic ban carries: MaxEjectionPercent when it
// caps, else 0.
func (p BanPolicy) capOf() int {
	if p.Capped() {
		return p.MaxEjectionPercent
	}
	return 0
}
