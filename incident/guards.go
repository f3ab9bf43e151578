package incident

import (
	"fmt"
	"time"

	"github.com/airouter/airouter/domain"
)

// The timeline's lines for cooldowns and for what Fail2Ban's guards did
// instead of banning.

// cooldownText says until when a pair (model "*": every model of the
// credential) cools down and why: "cooling down until 10:00:07 (429 rate
// limit, step 3: 4s)", "(401 auth: 401)", "(429 Retry-After 30s)". An
// event written before cooldowns carried a reason was a Retry-After.
func cooldownText(ev domain.Event) string {
	c := ev.Cooldown
	why := c.Reason
	if why == "" {
		why = "Retry-After " + domain.ShortDuration(c.Until.Sub(ev.At).Round(time.Millisecond))
	}
	what := "cooling down"
	if c.Model == domain.AllModels {
		what = "every model cooling down"
	}
	return fmt.Sprintf("%s until %s (%d %s)", what, clock(c.Until, ev.At), c.Status, why)
}

// withheldText says which rule would have banned the pair and why the
// ejection cap withheld it.
func withheldText(w domain.Withheld) string {
	return fmt.Sprintf("ban withheld by the ejection cap (%d of %d pairs of the model banned, cap %d%%): rule %s; still counted, banned once the cap allows",
		w.Banned, w.Pairs, w.Cap, w.Rule)
}

// shadowText says what a shadow rule would have banned, and until when.
func (t *Timeline) shadowText(ev domain.Event) string {
	b := *ev.Shadowed
	text := "would have banned (shadow rule, enforce: false; nothing banned) " + t.fail2banWhy(b)
	if b.Permanent || b.Until == nil {
		return text + ", permanent"
	}
	return text + ", until " + clock(*b.Until, ev.At)
}

// notImposed reports whether the fold left the automatic ban ev out: it
// changed no ban. A manual ban is always imposed.
func (t *Timeline) notImposed(ev domain.Event) bool {
	return ev.Ban.Origin == domain.OriginFail2Ban && len(t.change.Bans) == 0
}

// notImposedText says why an automatic ban in the log changed nothing: the
// pair was banned already (the same ban again, or a manual ban holds it),
// or, for a ban decided under an ejection cap, the model's bans left no
// room under the cap when it arrived (decided on several pairs at once).
func (t *Timeline) notImposedText(ev domain.Event) string {
	b := ev.Ban
	v := t.state.Pair(b.Key(), ev.At)
	switch {
	case v.Banned && v.BanOrigin == domain.OriginAdmin:
		return "automatic ban not imposed: a manual ban holds the pair (" + t.fail2banWhy(*b) + ")"
	case v.Banned:
		return "automatic ban not imposed: the pair is banned already (" + t.fail2banWhy(*b) + ")"
	case b.Cap > 0:
		return fmt.Sprintf("ban not imposed by the ejection cap (%d%%): decided with other bans of the model not yet in the log, it found no room when it arrived; rule %s",
			b.Cap, t.fail2banWhy(*b))
	}
	return "automatic ban not imposed (" + t.fail2banWhy(*b) + ")"
}
