package proxy

import (
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
)

// httpDateLayouts are the HTTP-date forms (RFC 9110 §5.6.7: IMF-fixdate and
// the obsolete RFC 850 and asctime forms), plus a numeric zone, which some
// servers send.
var httpDateLayouts = [...]string{time.RFC1123, time.RFC1123Z, time.RFC850, time.ANSIC}

// parseRetryAfter reads a Retry-After header value: delay-seconds (a
// fraction such as "1.5" is accepted too) or an HTTP-date, which is resolved
// against now. The wait is capped at domain.MaxRetryAfter, the longest a
// cooldown lasts. A date in the past means "retry now" and gives 0, true. An
// empty, negative or unreadable value gives false.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if c := v[0]; c >= '0' && c <= '9' {
		return parseDelaySeconds(v)
	}
	for _, layout := range httpDateLayouts {
		t, err := time.Parse(layout, v)
		if err != nil {
			continue
		}
		d := t.Sub(now)
		switch {
		case d < 0:
			return 0, true
		case d > domain.MaxRetryAfter:
			return domain.MaxRetryAfter, true
		}
		return d, true
	}
	return 0, false
}

// parseDelaySeconds reads "<digits>[.<digits>]" as seconds, capped at
// domain.MaxRetryAfter without overflowing on long digit runs.
func parseDelaySeconds(v string) (time.Duration, bool) {
	whole, frac, dot := strings.Cut(v, ".")
	if whole == "" || (dot && frac == "") {
		return 0, false
	}
	var d time.Duration
	for i := 0; i < len(whole); i++ {
		c := whole[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if d <= domain.MaxRetryAfter {
			d = d*10 + time.Duration(c-'0')*time.Second
		}
	}
	scale := time.Second / 10
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d += time.Duration(c-'0') * scale
		scale /= 10
	}
	return min(d, domain.MaxRetryAfter), true
}
