package eventlog

import (
	"fmt"
	"strings"

	"github.com/airouter/airouter/domain"
)

// Stream and subject names. See the package documentation for the layout.
const (
	EventsStream       = "AIROUTER_EVENTS"
	EventsSubjects     = "airouter.events.>"
	CheckpointsStream  = "AIROUTER_CHECKPOINTS"
	CheckpointsSubject = "airouter.checkpoints.projections"

	subjectPrefix = "airouter.events."
)

// BanSubjects returns the filter subjects of ban and unban events, for a
// ban follower.
func BanSubjects() []string {
	return []string{subjectPrefix + "ban.>", subjectPrefix + "unban.>"}
}

// Subject returns the subject an event is published on, or "" when the
// event's kind is unknown or its payload is missing.
func Subject(ev domain.Event) string {
	switch {
	case ev.Kind == domain.KindOutcomeRecorded && ev.Outcome != nil:
		return pairSubject("outcome.", ev.Outcome.Credential, ev.Outcome.Model)
	case ev.Kind == domain.KindBanImposed && ev.Ban != nil:
		return pairSubject("ban.", ev.Ban.Credential, ev.Ban.Model)
	case ev.Kind == domain.KindBanLifted && ev.Unban != nil:
		return pairSubject("unban.", ev.Unban.Credential, ev.Unban.Model)
	case ev.Kind == domain.KindCooldownStarted && ev.Cooldown != nil:
		return pairSubject("cooldown.", ev.Cooldown.Credential, ev.Cooldown.Model)
	case ev.Kind == domain.KindModelBenched && ev.Bench != nil:
		return subjectPrefix + "bench." + EscapeToken(ev.Bench.Model)
	case ev.Kind == domain.KindFallbackSettingsChanged && ev.Settings != nil:
		return subjectPrefix + "settings.fallback"
	}
	return ""
}

func pairSubject(kind, credential, model string) string {
	return subjectPrefix + kind + EscapeToken(credential) + "." + EscapeToken(model)
}

const hexDigits = "0123456789ABCDEF"

// EscapeToken turns any string into one valid subject token, reversibly:
// bytes outside '!'..'~', and '.', '*', '>' and '~' become "~XX"; the empty
// string becomes "~".
func EscapeToken(s string) string {
	if s == "" {
		return "~"
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if needsEscape(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if needsEscape(c) {
			b.WriteByte('~')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0x0F])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func needsEscape(c byte) bool {
	return c <= ' ' || c > '~' || c == '.' || c == '*' || c == '>' || c == '~'
}

// UnescapeToken reverses EscapeToken.
func UnescapeToken(tok string) (string, error) {
	if tok == "~" {
		return "", nil
	}
	if !strings.Contains(tok, "~") {
		return tok, nil
	}
	var b strings.Builder
	b.Grow(len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c != '~' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(tok) {
			return "", fmt.Errorf("subject token %q: truncated escape at byte %d", tok, i)
		}
		hi, lo := unhex(tok[i+1]), unhex(tok[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("subject token %q: bad escape at byte %d", tok, i)
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	return b.String(), nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}
