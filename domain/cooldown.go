package domain

import (
	"fmt"
	"time"
)

// CooldownPolicy is the cooldown ladder (the cooldown section of the
// config). Zero values turn each part off, leaving only the upstream's
// Retry-After to cool a pair.
type CooldownPolicy struct {
	// RateLimitBase cools a pair for a 429: the base for the first one
	// since the pair's last success, doubling with each further one up to
	// RateLimitMax. 0 is off.
	RateLimitBase time.Duration
	RateLimitMax  time.Duration
	// Auth cools every model of a credential for a 401. 0 is off.
	Auth time.Duration
}

// LadderStep is how long step n (1 for the first) of the rate-limit
// ladder cools a pair: the base doubled n-1 times, at most the max (a max
// below the base is the base).
func (c CooldownPolicy) LadderStep(n int) time.Duration {
	d := c.RateLimitBase
	for i := 1; i < n && d < c.RateLimitMax; i++ {
		d *= 2
	}
	return min(d, max(c.RateLimitMax, c.RateLimitBase))
}

// retryAfter is how long the outcome's Retry-After asks for, capped at
// MaxRetryAfter; 0 when it carries none.
func retryAfter(o *Outcome) time.Duration {
	switch {
	case o.RetryAfterMS <= 0:
		return 0
	case o.RetryAfterMS >= MaxRetryAfter.Milliseconds():
		return MaxRetryAfter
	}
	return time.Duration(o.RetryAfterMS) * time.Millisecond
}

// retryAfterCooldown holds the pair back for as long as a 429 or 503
// asked with Retry-After.
func retryAfterCooldown(ev Event, f Facts) (Event, bool) {
	o := ev.Outcome
	wait := retryAfter(o)
	if (o.Status != 429 && o.Status != 503) || wait <= 0 {
		return Event{}, false
	}
	return pairCooldown(ev, f, wait, 0, "Retry-After "+ShortDuration(wait))
}

// ladderCooldown cools the pair for a 429 by the ladder's next step, or
// for the 429's Retry-After when that is longer. A 429 arriving while the
// pair still cools (sent before the cooldown began) does not climb the
// ladder; its Retry-After may still extend the cooldown.
func ladderCooldown(c CooldownPolicy, ev Event, f Facts) (Event, bool) {
	if f.CooldownUntil.After(ev.At) {
		return retryAfterCooldown(ev, f)
	}
	step := f.LadderStep + 1
	d := c.LadderStep(step)
	reason := fmt.Sprintf("rate limit, step %d: %s", step, ShortDuration(d))
	if ra := retryAfter(ev.Outcome); ra > d {
		d, reason = ra, fmt.Sprintf("Retry-After %s (%s)", ShortDuration(ra), reason)
	}
	return pairCooldown(ev, f, d, step, reason)
}

// pairCooldown is the cooldown of the outcome's pair for wait, unless the
// pair is already banned or cooling at least that long.
func pairCooldown(ev Event, f Facts, wait time.Duration, step int, reason string) (Event, bool) {
	o := ev.Outcome
	at := ev.At.UTC()
	until := at.Add(wait)
	if f.Banned && (f.BanPermanent || !f.BanUntil.Before(until)) {
		return Event{}, false
	}
	if !f.CooldownUntil.Before(until) {
		return Event{}, false
	}
	return Event{
		V:    SchemaVersion,
		Kind: KindCooldownStarted,
		ID:   decisionID("cooldown", o.Credential, o.Model, ev.Pos()),
		At:   at,
		Cooldown: &Cooldown{
			Credential: o.Credential,
			Model:      o.Model,
			Until:      until,
			Status:     o.Status,
			Reason:     reason,
			Step:       step,
			CauseSeq:   ev.Seq,
			CauseIndex: ev.Index,
		},
	}, true
}

// authCooldown cools every model of the credential for a 401 (Model "*"),
// unless the credential already cools or is banned past that. A 401 while
// it cools was sent before; it does not extend the cooldown.
func authCooldown(d time.Duration, ev Event, f Facts) (Event, bool) {
	o := ev.Outcome
	at := ev.At.UTC()
	until := at.Add(d)
	if f.CredCooldownUntil.After(at) || (f.Banned && (f.BanPermanent || !f.BanUntil.Before(until))) {
		return Event{}, false
	}
	return Event{
		V:    SchemaVersion,
		Kind: KindCooldownStarted,
		ID:   decisionID("cooldown", o.Credential, AllModels, ev.Pos()),
		At:   at,
		Cooldown: &Cooldown{
			Credential: o.Credential,
			Model:      AllModels,
			Until:      until,
			Status:     o.Status,
			Reason:     "auth: 401",
			CauseSeq:   ev.Seq,
			CauseIndex: ev.Index,
			Since:      at,
		},
	}, true
}
