package eventlog

import (
	"crypto/sha256"
	"errors"
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
	case ev.Kind == domain.KindModelUnbenched && ev.Unbench != nil:
		// The benches' subject: a bench decided on an outcome before the
		// lift finds the lift stored after its cause and is not stored.
		return subjectPrefix + "bench." + EscapeToken(ev.Unbench.Model)
	case ev.Kind == domain.KindBanWithheld && ev.Withheld != nil:
		// Beside the pair's bans, not on them: a ban decided once the
		// ejection cap allows it must not find the withholding stored
		// after its cause.
		return pairSubject("withheld.", ev.Withheld.Credential, ev.Withheld.Model)
	case ev.Kind == domain.KindBanShadowed && ev.Shadowed != nil:
		return pairSubject("shadow.", ev.Shadowed.Credential, ev.Shadowed.Model)
	case ev.Kind == domain.KindProbeClaimed && ev.Probe != nil:
		return pairSubject("probe.", ev.Probe.Credential, ev.Probe.Model)
	case ev.Kind == domain.KindCooldownLifted && ev.CooldownLift != nil:
		return pairSubject("uncool.", ev.CooldownLift.Credential, ev.CooldownLift.Model)
	case ev.Kind == domain.KindReplicaHeartbeat && ev.Heartbeat != nil:
		return subjectPrefix + "replica." + EscapeToken(ev.Heartbeat.Replica)
	case ev.Kind == domain.KindFallbackSettingsChanged && ev.Settings != nil:
		return subjectPrefix + "settings.fallback"
	case ev.Kind == domain.KindPolicyChanged && ev.Policy != nil:
		return subjectPrefix + "policy"
	}
	return ""
}

func pairSubject(kind, credential, model string) string {
	return subjectPrefix + kind + EscapeToken(credential) + "." + EscapeToken(model)
}

const hexDigits = "0123456789ABCDEF"

// MaxTokenLen is the longest subject token EscapeToken makes, so a subject
// stays far below NATS's control-line limit (4 KiB) whatever a credential
// or model is called: the longest subject, a cooldown's, is under 220
// bytes.
const MaxTokenLen = 96

// The parts of a shortened token: a readable prefix of the escaped name,
// the marker "~~" (never in an escaped token, whose '~' is always followed
// by two hex digits) and the first hashBytes bytes of the full name's
// SHA-256 in upper-case hex.
const (
	shortMarker = "~~"
	hashBytes   = 8
	prefixLen   = MaxTokenLen - len(shortMarker) - 2*hashBytes
)

// EscapeToken turns any string into one valid subject token of at most
// MaxTokenLen bytes: bytes outside '!'..'~', and '.', '*', '>' and '~'
// become "~XX"; the empty string becomes "~". An escaped token longer than
// MaxTokenLen is shortened to its first bytes (never cutting an escape),
// "~~" and a hash of the whole name, so distinct names keep distinct
// tokens; only such a shortened token cannot be unescaped, and the event
// always carries the full name.
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
	if n == 0 && len(s) <= MaxTokenLen {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s)+2*n, MaxTokenLen))
	for i := 0; i < len(s); i++ {
		c := s[i]
		w := 1
		if needsEscape(c) {
			w = 3
		}
		if len(s)+2*n > MaxTokenLen && b.Len()+w > prefixLen {
			return shorten(&b, s)
		}
		if w == 3 {
			b.WriteByte('~')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&0x0F])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// shorten ends a token's readable prefix in b with the marker and the hash
// of the full name s.
func shorten(b *strings.Builder, s string) string {
	sum := sha256.Sum256([]byte(s))
	b.WriteString(shortMarker)
	for _, c := range sum[:hashBytes] {
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0x0F])
	}
	return b.String()
}

func needsEscape(c byte) bool {
	return c <= ' ' || c > '~' || c == '.' || c == '*' || c == '>' || c == '~'
}

// ErrShortenedToken is UnescapeToken's answer for a token EscapeToken
// shortened: the name is in the event, not in the subject.
var ErrShortenedToken = errors.New("shortened subject token: the full name is only in the event")

// UnescapeToken reverses EscapeToken for a token it did not shorten.
func UnescapeToken(tok string) (string, error) {
	if tok == "~" {
		return "", nil
	}
	if strings.Contains(tok, shortMarker) {
		return "", fmt.Errorf("subject token %q: %w", tok, ErrShortenedToken)
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
