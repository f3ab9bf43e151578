package proxy

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
)

// exhaust answers a request no candidate could serve: 504 when the time
// budget ran out, 429 when every attempt was rate-limited or no candidate
// was usable at all (banned, cooling down, benched or over its limits),
// otherwise 502. Never 500.
func (p *Proxy) exhaust(w http.ResponseWriter, rq *request) {
	status, code := http.StatusBadGateway, "upstream_failed"
	var msg string
	switch {
	case rq.budgetOut:
		status, code = http.StatusGatewayTimeout, "fallback_time_budget_exceeded"
		msg = "The time budget of " + time.Duration(rq.settings.TimeBudget).String() +
			" ran out before a candidate for " + rq.model + " answered."
	case len(rq.hops) == 0:
		status, code = http.StatusTooManyRequests, "rate_limit_exceeded"
		msg = "No candidate for " + rq.model +
			" is usable now: each is banned, cooling down, benched or over its rate limits."
	case allRateLimited(rq.hops):
		status, code = http.StatusTooManyRequests, "rate_limit_exceeded"
		msg = "All candidates for " + rq.model + " are rate-limited."
	default:
		msg = "All candidates for " + rq.model + " failed."
	}
	if len(rq.hops) > 0 {
		msg += " Trail: " + trailText(rq.hops)
	}
	p.metrics.Exhausted(status)
	h := w.Header()
	if status == http.StatusTooManyRequests {
		h.Set("Retry-After", strconv.FormatInt(p.retryAfter(rq), 10))
	}
	setFallbackHeaders(h, rq.hops, rq.settings.ExposeDetailHeaders)
	writeError(w, rq.ep, status, msg, code, trailEntries(rq.hops))
	args := []any{"request_id", rq.id, "model", rq.model, "status", status, "attempts", len(rq.hops), "trail", h.Get(hdrTrail)}
	if len(rq.hops) == 0 {
		// Nothing was tried: the answer comes at once, so a client's
		// retry loop would flood the log. One line per interval per
		// model, counting the requests it stands for.
		ok, held := p.unusable.allow(rq.model, p.clock.Now())
		if !ok {
			return
		}
		args = append(args, "suppressed", held, "suppressed_interval", unusableWarnEvery.String())
	}
	p.log.Warn("request exhausted its candidates", args...)
}

func allRateLimited(hops []hop) bool {
	for i := range hops {
		if hops[i].class != domain.ClassRateLimited {
			return false
		}
	}
	return len(hops) > 0
}

// trailText renders the hops as "a/gpt-4o: 429; b/gpt-4o: timeout".
func trailText(hops []hop) string {
	var b strings.Builder
	for i := range hops {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(hops[i].cand.cred.name)
		b.WriteByte('/')
		b.WriteString(hops[i].cand.model)
		b.WriteString(": ")
		if hops[i].status > 0 {
			b.WriteString(strconv.Itoa(hops[i].status))
		} else {
			b.WriteString(string(hops[i].class))
		}
	}
	return b.String()
}

func trailEntries(hops []hop) []trailEntry {
	out := make([]trailEntry, len(hops))
	for i := range hops {
		out[i] = trailEntry{Credential: hops[i].cand.cred.name, Model: hops[i].cand.model,
			Status: hops[i].status, Class: hops[i].class, MS: hops[i].ms}
	}
	return out
}

// retryAfter is the whole seconds, at least 1, until one of the model's
// candidates on this surface is usable again: the end of its ban, cooldown
// or bench, a free slot in its rate-limit windows, or the Retry-After its
// upstream just sent. A candidate nothing is known to hold back counts as
// usable now; permanently banned ones never become usable. With nothing
// known the answer is 1.
func (p *Proxy) retryAfter(rq *request) int64 {
	now := p.clock.Now()
	sec := now.Unix()
	g := p.gate()
	tried := make(map[*candidate]time.Duration, len(rq.hops))
	for i := range rq.hops {
		tried[rq.hops[i].cand] = rq.hops[i].retryAfter
	}
	best := time.Duration(-1)
	for i := range rq.pool.cands {
		c := &rq.pool.cands[i]
		if c.cred.eps&rq.ep == 0 {
			continue
		}
		wait := time.Duration(max(c.cred.limits.freeIn(sec), c.pair.freeIn(sec))) * time.Second
		if g != nil {
			if b, blocked := g.Blocked(c.cred.name, c.model, now); blocked {
				if b.Permanent || b.Until.IsZero() {
					continue
				}
				wait = max(wait, b.Until.Sub(now))
			}
		}
		if ra, ok := tried[c]; ok {
			if ra <= 0 {
				continue // it just failed and said nothing about when
			}
			wait = max(wait, ra)
		}
		if best < 0 || wait < best {
			best = wait
		}
	}
	if best <= 0 {
		return 1
	}
	return max(1, int64((best+time.Second-1)/time.Second))
}
