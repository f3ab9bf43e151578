package domain

import (
	"fmt"
	"strings"
	"time"
)

// ParseMoment reads a moment as operators write it: an RFC 3339 time
// (fractional seconds allowed) or a duration back from now ("90m", "2h").
// "" is no moment (the zero time). replay's -since, -until and -at and the
// admin API's ?at= read moments by it.
func ParseMoment(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-11-29T03:12:00Z) nor a duration back from now (2h)", s)
	}
	return now.Add(-d).UTC(), nil
}
