package domain

import "time"

// ModelFailure is one bench-countable failure of a model, kept by the
// projections in a short, bounded window per model.
type ModelFailure struct {
	Credential string    `json:"credential"`
	At         time.Time `json:"at"`
	Seq        uint64    `json:"seq"`
	Index      uint32    `json:"index,omitempty"`
	// RequestID, Code and BodyUnsent are the outcome's (Outcome.RequestID,
	// Outcome.Code, Outcome.BodyUnsent): the bench counts one request's
	// same failure once (see Decide). Empty in windows folded before they
	// existed, and for outcomes without a request id; such a failure
	// counts on its own.
	RequestID  string `json:"request_id,omitempty"`
	Code       int    `json:"code,omitempty"`
	BodyUnsent bool   `json:"body_unsent,omitempty"`
}

// sameFailure reports whether f and g are one request's same failure, which
// the bench counts once: the same request id (never empty), and both failed
// while the upstream was still receiving the body, or neither did and both
// have the same code (Outcome.Code).
func (f ModelFailure) sameFailure(g ModelFailure) bool {
	if f.RequestID == "" || f.RequestID != g.RequestID || f.BodyUnsent != g.BodyUnsent {
		return false
	}
	return f.BodyUnsent || f.Code == g.Code
}

// Facts is what the projections know about an outcome's pair and model right
// after folding that outcome. The policy decides from Facts and the policy
// values alone, so the same ordered log and config give the same decisions
// on every replica.
type Facts struct {
	// Counts are the pair's failure counters per status code after the
	// outcome was folded (empty after a success).
	Counts map[int]int
	// Streak is the log position of the first failure counted since the
	// pair's counters were last reset (by a success, or by a ban on the
	// pair ending): it names the pair's current failure streak, and every
	// Fail2Ban decision within one streak carries the same id. Zero when
	// nothing is counted.
	Streak Pos
	// Banned is true when the pair or its whole credential was banned at
	// the outcome's time; the fold then ignored the outcome.
	Banned bool
	// BanUntil/BanPermanent describe that ban, so a cooldown never
	// shortens it.
	BanUntil     time.Time
	BanPermanent bool
	// CooldownUntil is the pair's current cooldown end (zero when none).
	CooldownUntil time.Time
	// ModelFailures is the model's recent bench-countable failures after
	// the fold, oldest first (empty after a success on any credential).
	ModelFailures []ModelFailure
	// BenchedUntil is the model's current bench end (zero when none).
	BenchedUntil time.Time

	// ModelPairs and ModelBanned are what the ejection cap reads: the
	// pairs of the outcome's model the log has named (an outcome, a ban,
	// a cooldown or a guard event on the pair, this pair included) and how
	// many of them are banned at the outcome's time, by any origin (a
	// credential's wildcard ban bans its pairs). Filled only for a failure
	// on a pair that is not banned; zero otherwise.
	ModelPairs, ModelBanned int
	// Withheld is the streak whose ban the ejection cap withheld (the
	// pair's folded ban.withheld), zero when none: a streak is withheld
	// once.
	Withheld Pos
	// WouldBan is true when the pair holds a shadow ban (ban.shadowed) at
	// the outcome's time: a shadow rule does not decide it again.
	WouldBan bool
	// LadderStep is the rate-limit ladder's last step on the pair since
	// its last success (0 when none).
	LadderStep int
	// CredCooldownUntil is the end of the credential's cooldown of every
	// model (an auth cooldown), zero when none.
	CredCooldownUntil time.Time
}
