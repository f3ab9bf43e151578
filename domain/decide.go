package domain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Decide applies the ban policy to one live outcome event, given the Facts of
// its pair and model right after the outcome was folded. It returns the
// decisions to publish, in order: a Fail2Ban ban, a cooldown, a model bench;
// usually none (nil, without allocating).
//
// Decide is a pure function of its arguments: it reads no clock. Every
// decision is stamped with the outcome's time (At, Since, Until are derived
// from ev.At) and its ID is derived from log positions, so two replicas
// deciding from the same log, or a retried publish, produce the same
// message id and the log keeps one copy. A cooldown or a bench is named
// after the outcome that caused it ("cooldown/<cred>/<model>/<pos>",
// "bench/<model>/<pos>", pos = ev.Pos() as "41" or "41.3"); a Fail2Ban ban
// after the pair's failure streak ("f2b/<cred>/<model>/<streak>", streak =
// Facts.Streak), so every decision to ban the pair within one streak is the
// same ban. ev.Seq must therefore be set (the event was read back from the
// log).
//
// The rules:
//
//   - Fail2Ban counts, per status code, only the codes watched for the
//     credential (BanPolicy.Watched); 2xx never bans; a timeout counts as 408
//     and any other transport failure as 502 (Outcome.Code). The rule is
//     BanPolicy.RuleFor. The pair is banned when its counter for the
//     outcome's code is at or past the rule's threshold (a MaxAttempts below
//     1 is treated as 1: the first matching error bans). Every failure that
//     leaves its code's counter at or past the threshold decides the ban, so
//     a decision that was lost (queue full, publish failed) is made again by
//     the pair's next such failure instead of leaving the pair unbanned
//     until a success. The
//     re-decisions, and those of outcomes that were in flight when the ban
//     was decided, carry the streak's id: the log de-duplicates them, and
//     the fold ignores a ban whose id is the key's ban already. The code is
//     not part of the id: a pair has one ban key, so a streak bans it once,
//     by whichever code got there first. This needs the fold to clear a
//     pair's counters, and so start a new streak, when its ban ends (expiry
//     or lift), which projections.Apply does. Nothing is decided for a pair
//     that is banned (Facts.Banned) or for a proxy credential
//     (Outcome.Proxy or BanPolicy.ProxyCredentials): a relay's errors
//     reflect its own pool. A rule with Permanent, or without a positive
//     Duration, bans for good.
//   - A ban a shadow rule decides (BanPolicy.Shadowed: enforce: false) is
//     published as ban.shadowed ("shadow/<cred>/<model>/<streak>") and
//     bans nothing; not again while the pair's shadow ban holds
//     (Facts.WouldBan).
//   - Under an ejection cap (BanPolicy.MaxEjectionPercent 1..99) a ban
//     that would leave more than that share of the model's pairs banned,
//     or all of them (CapWithholds over Facts.ModelBanned and
//     Facts.ModelPairs), is withheld: a ban.withheld
//     ("withheld/<cred>/<model>/<streak>"), once per streak
//     (Facts.Withheld), and the pair's counters stay, so a later failure
//     bans it once the cap allows. A capped ban carries the cap (Ban.Cap)
//     for the fold to apply again.
//   - A 429 or 503 carrying Retry-After (Outcome.RetryAfterMS > 0) cools the
//     pair until ev.At + Retry-After, capped at MaxRetryAfter, whatever its
//     counters and also for proxy credentials: a cooldown is not a ban, it
//     honours what the upstream asked for. No cooldown is emitted when the
//     pair is already banned or cooling at least that long. When the same
//     outcome also bans the pair, both are emitted, the ban first, so that
//     lifting the ban early still honours the upstream's Retry-After. The
//     cooldown ladder (BanPolicy.Cooldown, cooldown.go) adds a cooldown
//     for a 429 without Retry-After, doubling per step, and one of every
//     model of the credential (Model "*") for a 401.
//   - With BanPolicy.Bench.Failures > 0, a bench-countable failure
//     (Class.CountsForBench) benches the model everywhere when the model's
//     failures within Bench.Window before ev.At number at least
//     Bench.Failures and come from at least two credentials, unless the model
//     is already benched past ev.At. One request's same failure counts once,
//     however many credentials it failed on: failures with the same request
//     id and the same code, or with the same request id that all failed
//     while the upstream was still receiving the body (Outcome.BodyUnsent),
//     are one failure (a body the upstreams refuse is the request's fault,
//     not the model's). Outcomes without a request id count one each. Proxy credentials' failures count: a
//     model outage is model-wide. A Window or Duration that is not positive
//     turns benching off.
//
// A canceled outcome (the client went away) never decides anything, and
// events of other kinds are ignored.
func Decide(p BanPolicy, ev Event, f Facts) []Event {
	if ev.Kind != KindOutcomeRecorded || ev.Outcome == nil || ev.Outcome.Class == ClassCanceled {
		return nil
	}
	var out []Event
	if e, ok := decideFail2Ban(p, ev, f); ok {
		out = append(out, e)
	}
	if e, ok := decideCooldown(p, ev, f); ok {
		out = append(out, e)
	}
	if e, ok := decideBench(p.Bench, ev, f); ok {
		out = append(out, e)
	}
	return out
}

// decideFail2Ban bans the outcome's pair when its counter for the outcome's
// code is at or past the rule's threshold.
func decideFail2Ban(p BanPolicy, ev Event, f Facts) (Event, bool) {
	o := ev.Outcome
	if f.Banned || o.Proxy || p.ProxyCredentials[o.Credential] {
		return Event{}, false
	}
	code := o.Code()
	if code == 0 || (code >= 200 && code < 300) || !p.Watched(o.Credential, code) {
		return Event{}, false
	}
	rule := p.RuleFor(o.Credential, code)
	n := f.Counts[code]
	if n < threshold(rule) {
		return Event{}, false
	}
	ban := newBan(p, ev, code, n, rule)
	switch {
	case p.Shadowed(o.Credential, code):
		return shadowBan(ban, ev, f)
	case p.capWithholds(f):
		return withheldBan(p, ban, ev, f)
	}
	return Event{
		V:    SchemaVersion,
		Kind: KindBanImposed,
		ID:   decisionID("f2b", o.Credential, o.Model, f.Streak),
		At:   ban.Since,
		Ban:  ban,
	}, true
}

// newBan is the ban a rule decides on the outcome ev, its n-th failure
// with code.
func newBan(p BanPolicy, ev Event, code, n int, rule Rule) *Ban {
	o := ev.Outcome
	at := ev.At.UTC()
	ban := &Ban{
		Credential: o.Credential,
		Model:      o.Model,
		Origin:     OriginFail2Ban,
		Reason:     banReason(p, o.Credential, code, n, rule),
		ErrorCode:  code,
		Since:      at,
		Permanent:  permanent(rule),
		Failures:   n,
		Cap:        p.capOf(),
		CauseSeq:   ev.Seq,
		CauseIndex: ev.Index,
	}
	if !ban.Permanent {
		until := at.Add(rule.Duration)
		ban.Until = &until
	}
	return ban
}

// threshold is the count that bans under a rule. A rule without a positive
// MaxAttempts bans on the first matching error.
func threshold(r Rule) int { return max(r.MaxAttempts, 1) }

// permanent reports whether a rule bans for good: it says so, or it has no
// positive duration, so a rule without one never bans for no time at all.
func permanent(r Rule) bool { return r.Permanent || r.Duration <= 0 }

// banReason explains a Fail2Ban ban, naming the rule that applied:
// "3 x 429 (rule 429: max_attempts 5, ban 5m)" for a global per-code rule,
// "3 x 400 (credential rule 400: ...)" for a credential's own rule, and
// "3 x 500 (max_attempts 3, ban permanent)" for the top-level rule.
func banReason(p BanPolicy, credential string, code, n int, r Rule) string {
	ban := "permanent"
	if !permanent(r) {
		ban = ShortDuration(r.Duration)
	}
	var source string
	if o, ok := p.Credentials[credential]; ok {
		if _, ok := o.Rules[code]; ok {
			source = "credential rule " + strconv.Itoa(code) + ": "
		}
	}
	if source == "" {
		if _, ok := p.Rules[code]; ok {
			source = "rule " + strconv.Itoa(code) + ": "
		}
	}
	return fmt.Sprintf("%d x %d (%smax_attempts %d, ban %s)", n, code, source, r.MaxAttempts, ban)
}

// MaxRetryAfter caps how long an upstream's Retry-After can hold a pair back.
const MaxRetryAfter = 24 * time.Hour

// decideCooldown holds the pair, or for a 401 under the auth cooldown the
// whole credential, back (cooldown.go has the rules).
func decideCooldown(p BanPolicy, ev Event, f Facts) (Event, bool) {
	switch o := ev.Outcome; {
	case o.Status == 401 && p.Cooldown.Auth > 0:
		return authCooldown(p.Cooldown.Auth, ev, f)
	case o.Status == 429 && p.Cooldown.RateLimitBase > 0:
		return ladderCooldown(p.Cooldown, ev, f)
	}
	return retryAfterCooldown(ev, f)
}

// decideBench benches the outcome's model when it failed often enough, on at
// least two credentials, within the window.
func decideBench(bp BenchPolicy, ev Event, f Facts) (Event, bool) {
	o := ev.Outcome
	if bp.Failures <= 0 || bp.Window <= 0 || bp.Duration <= 0 || !o.Class.CountsForBench() {
		return Event{}, false
	}
	at := ev.At.UTC()
	if f.BenchedUntil.After(at) {
		return Event{}, false
	}
	from := at.Add(-bp.Window)
	n, first, several := 0, -1, false
	for i, mf := range f.ModelFailures {
		if !mf.At.After(from) {
			continue
		}
		if !countedBefore(f.ModelFailures[:i], mf, from) {
			n++
		}
		if first < 0 {
			first = i
		} else if mf.Credential != f.ModelFailures[first].Credential {
			several = true
		}
	}
	if n < bp.Failures || !several {
		return Event{}, false
	}
	creds := make([]string, 0, n)
	for _, mf := range f.ModelFailures {
		if mf.At.After(from) {
			creds = append(creds, mf.Credential)
		}
	}
	slices.Sort(creds)
	creds = slices.Compact(creds)
	return Event{
		V:    SchemaVersion,
		Kind: KindModelBenched,
		ID:   "bench/" + o.Model + "/" + ev.Pos().String(),
		At:   at,
		Bench: &Bench{
			Model:       o.Model,
			Until:       at.Add(bp.Duration),
			Failures:    n,
			Credentials: creds,
			Reason: fmt.Sprintf("%d failures on %d credentials within %s (last: %s)",
				n, len(creds), ShortDuration(bp.Window), failureLabel(*o)),
			CauseSeq:   ev.Seq,
			CauseIndex: ev.Index,
		},
	}, true
}

// countedBefore reports whether an earlier failure within the window (after
// from) is the same failure of the same request as mf, so mf adds nothing to
// the bench count.
func countedBefore(earlier []ModelFailure, mf ModelFailure, from time.Time) bool {
	for _, e := range earlier {
		if e.At.After(from) && e.sameFailure(mf) {
			return true
		}
	}
	return false
}

// failureLabel names a failure in a reason: its status, or its class when no
// response arrived ("timeout", "connection").
func failureLabel(o Outcome) string {
	if o.Status > 0 {
		return strconv.Itoa(o.Status)
	}
	return string(o.Class)
}

// decisionID is the deterministic id of a decision about a pair, named by
// the log position at (the causing outcome's, or the streak's).
func decisionID(kind, credential, model string, at Pos) string {
	return kind + "/" + credential + "/" + model + "/" + at.String()
}

// ShortDuration renders a duration as ban and bench reasons write it: Go's
// form without trailing zero units ("5m", "1h", "1h30m", "90ms"). Tools
// that describe the log's events use it too, so their text and the reasons
// they quote write durations alike.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}
