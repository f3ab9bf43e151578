// Package redact removes secrets and personal data from text on its way into
// a log line, an error message, a response or an event: String and N for
// free text (upstream error bodies, reasons), URLs for configured URLs. It
// imports nothing of ours and keeps no state. It is not a step of an
// event's path but a filter at its edges: the proxy redacts upstream
// messages before they reach a client's trail, a header or a log line, the
// admin API an operator's ban reason before it is published, config and
// the log the URLs they show.
package redact

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultLimit is the length, in bytes, String cuts its result to.
const DefaultLimit = 512

// The placeholders that replace what String removes.
const (
	redactedValue = "[redacted]"
	redactedKey   = "[redacted-key]"
	redactedToken = "[redacted-token]"
	redactedEmail = "[redacted-email]"
)

// The patterns String applies. They are compiled once and only read
// afterwards. Secret fields are found by a scanner (secretfields in
// replaceSecretFields); regexps are kept for the rarer shapes and run only
// when a cheap test says they may match: the token patterns only on words
// of at least minTokenWord bytes.
var (
	// bearerToken is an auth scheme outside a named field.
	bearerToken = regexp.MustCompile(`(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*`)
	// queryKey is a key-like URL query parameter.
	queryKey = regexp.MustCompile(`(?i)([?&](?:key|sig|signature|code)=)[^&\s"'#]+`)
	// vendorKey is a provider key recognised by its prefix.
	vendorKey = regexp.MustCompile(`\b(?:sk-|gsk_|AIza|ghp_|gho_|github_pat_|hf_|nvapi-|xai-|pplx-|r8_)[A-Za-z0-9_\-]{8,}|\bAKIA[0-9A-Z]{16}\b`)
	// jwtToken is a three-segment token: a JWT ("eyJ...") or any three long
	// base64url segments.
	jwtToken = regexp.MustCompile(`\beyJ[\w-]{4,}\.[\w-]{4,}\.[\w-]*|\b[\w-]{16,}\.[\w-]{16,}\.[\w-]{16,}`)
	// opaqueToken is a long alphanumeric run.
	opaqueToken = regexp.MustCompile(`[A-Za-z0-9]{32,}`)
	// base64Token is a long base64 run; it counts as a token only when it
	// mixes digits and both cases (see mixedClasses), so paths survive.
	base64Token = regexp.MustCompile(`[A-Za-z0-9+/_\-]{40,}={0,2}`)
	// email is an e-mail address.
	email = regexp.MustCompile(`[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`)
)

// vendorPrefixes are the prefixes vendorKey looks for.
var vendorPrefixes = [...]string{"sk-", "gsk_", "AIza", "ghp_", "gho_", "github_pat_", "hf_", "nvapi-", "xai-", "pplx-", "r8_", "AKIA"}

// minTokenWord is the shortest word a token pattern can match ("hf_" and 8
// more characters).
const minTokenWord = 11

// secretNames are the field names, matched as a case-insensitive suffix
// ("x-api-key", "aws_secret_access_key", "refresh_token"), whose value is
// redacted.
var secretNames = [...]string{
	"api_key", "api-key", "apikey", "access_key", "access-key", "accesskey",
	"private_key", "private-key", "privatekey", "secret", "token", "password",
	"passwd", "authorization", "cookie",
}

// String removes secrets and personal data from text that may carry
// upstream content (an error body, a header, a log line, an event reason)
// and cuts it to DefaultLimit bytes. See N.
func String(s string) string { return N(s, DefaultLimit) }

// N removes secrets and personal data from s and cuts the result to
// limit bytes (no cut when limit <= 0), ending it with "…" when cut:
//
//   - whitespace and control characters collapse to single spaces, and
//     invalid UTF-8 becomes U+FFFD, so the result is safe in a header;
//   - the value of a field named like a secret (api_key, access_token,
//     token, secret, password, authorization, x-api-key, cookie, ...,
//     followed by = or :, quoted or not, also inside JSON) becomes
//     "[redacted]", keeping a leading "Bearer"/"Basic";
//   - "Bearer <token>" becomes "Bearer [redacted]", and key-like URL query
//     parameters (key=, sig=, code=) lose their values;
//   - provider keys (sk-, sk-ant-, gsk_, AIza, ghp_, hf_, nvapi-, xai-,
//     AKIA..., with 8+ characters after the prefix) become "[redacted-key]";
//   - JWT-like three-segment tokens, alphanumeric runs of 32+ characters and
//     base64 runs of 40+ that mix digits and both cases become
//     "[redacted-token]";
//   - e-mail addresses become "[redacted-email]".
//
// Redacting an already redacted text changes nothing.
func N(s string, limit int) string {
	if limit > 0 && len(s) > 4*limit+64 {
		// Bound the work on huge bodies, and drop the token the cut went
		// through, so no partial secret escapes the patterns below.
		s = s[:4*limit+64]
		if i := strings.LastIndexFunc(s, isSeparator); i > 0 {
			s = s[:i]
		}
	}
	s = collapseSpace(s)
	s = replaceSecretFields(s)
	if containsFold(s, "bearer") {
		s = bearerToken.ReplaceAllString(s, "$1 "+redactedValue)
	}
	if strings.ContainsAny(s, "?&") {
		s = queryKey.ReplaceAllString(s, "${1}"+redactedValue)
	}
	s = replaceTokenWords(s)
	if strings.Contains(s, "@") {
		s = email.ReplaceAllLiteralString(s, redactedEmail)
	}
	return cut(s, limit)
}

// replaceSecretFields replaces the value of every field named like a secret
// (secretNames) and followed by ':' or '=': bare, quoted, JSON-quoted or
// JSON-escaped inside a string, after an optional auth scheme, which is kept
// like the name, the separator and the quoting.
func replaceSecretFields(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if (s[i] != ':' && s[i] != '=') || !secretNameBefore(s, i) {
			continue
		}
		start := i + 1
		for start < len(s) && s[start] == ' ' {
			start++
		}
		end, ok := valueEnd(s, start)
		if !ok {
			continue
		}
		if isAuthScheme(s[start:end]) {
			// "Authorization: Bearer <token>": keep the scheme and redact
			// what follows; with nothing redactable after it (already a
			// placeholder), leave the field alone.
			next := end
			for next < len(s) && s[next] == ' ' {
				next++
			}
			if next == end {
				continue
			}
			if end, ok = valueEnd(s, next); !ok {
				continue
			}
			start = next
		}
		if last == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[last:start])
		b.WriteString(quoteLike(s[start:end], redactedValue))
		last = end
		i = end - 1
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// secretNameBefore reports whether the separator at i follows a name
// (possibly quoted, or JSON-escaped quoted) that ends in a secretNames entry.
func secretNameBefore(s string, i int) bool {
	k := i - 1
	for k >= 0 && s[k] == ' ' {
		k--
	}
	if k >= 0 && (s[k] == '"' || s[k] == '\'') {
		k--
		if k >= 0 && s[k] == '\\' {
			k--
		}
	}
	end := k + 1
	for k >= 0 && isNameByte(s[k]) {
		k--
	}
	name := s[k+1 : end]
	for _, n := range secretNames {
		if len(name) >= len(n) && strings.EqualFold(name[len(name)-len(n):], n) {
			return true
		}
	}
	return false
}

// valueEnd returns the end of the value that starts at i: a JSON string, a
// JSON-escaped string (\"...\"), a single-quoted string, each running to the
// end of s when unterminated, or a non-empty bare run.
func valueEnd(s string, i int) (int, bool) {
	switch {
	case i >= len(s):
		return 0, false
	case s[i] == '"':
		for q := i + 1; q < len(s); q++ {
			switch s[q] {
			case '\\':
				q++
			case '"':
				return q + 1, true
			}
		}
		return len(s), true
	case strings.HasPrefix(s[i:], `\"`):
		if q := strings.Index(s[i+2:], `\"`); q >= 0 {
			return i + 2 + q + 2, true
		}
		return len(s), true
	case s[i] == '\'':
		if q := strings.IndexByte(s[i+1:], '\''); q >= 0 {
			return i + 1 + q + 1, true
		}
		return len(s), true
	}
	q := i
	for q < len(s) && !strings.ContainsRune(" ,;&\"'{}[]\\<>", rune(s[q])) {
		q++
	}
	return q, q > i
}

// replaceTokenWords runs the token patterns over each word (a run of
// isTokenByte) long enough to hold a token.
func replaceTokenWords(s string) string {
	var b strings.Builder
	last, changed := 0, false
	for i := 0; i < len(s); {
		if !isTokenByte(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isTokenByte(s[j]) {
			j++
		}
		if j-i >= minTokenWord {
			if w := redactWord(s[i:j]); w != s[i:j] {
				if !changed {
					b.Grow(len(s))
					changed = true
				}
				b.WriteString(s[last:i])
				b.WriteString(w)
				last = j
			}
		}
		i = j
	}
	if !changed {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// redactWord replaces provider keys and tokens inside one word.
func redactWord(w string) string {
	for _, prefix := range vendorPrefixes {
		if strings.Contains(w, prefix) {
			w = vendorKey.ReplaceAllLiteralString(w, redactedKey)
			break
		}
	}
	if strings.Count(w, ".") >= 2 {
		w = jwtToken.ReplaceAllLiteralString(w, redactedToken)
	}
	if len(w) >= 32 {
		w = opaqueToken.ReplaceAllLiteralString(w, redactedToken)
	}
	if len(w) >= 40 {
		w = base64Token.ReplaceAllStringFunc(w, func(m string) string {
			if mixedClasses(m) {
				return redactedToken
			}
			return m
		})
	}
	return w
}

// isTokenByte reports whether c can be part of a key or token.
func isTokenByte(c byte) bool {
	return isNameByte(c) || c == '+' || c == '/' || c == '='
}

// isNameByte reports whether c can be part of a field name: [A-Za-z0-9_.-].
func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// ignoring case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// isAuthScheme reports whether v is an auth scheme a secret field keeps.
func isAuthScheme(v string) bool {
	return strings.EqualFold(v, "bearer") || strings.EqualFold(v, "basic") || strings.EqualFold(v, "token")
}

// quoteLike wraps placeholder in the quoting that value used.
func quoteLike(value, placeholder string) string {
	switch {
	case strings.HasPrefix(value, `\"`):
		return `\"` + placeholder + `\"`
	case strings.HasPrefix(value, `"`):
		return `"` + placeholder + `"`
	case strings.HasPrefix(value, `'`):
		return `'` + placeholder + `'`
	}
	return placeholder
}

// mixedClasses reports whether s has a digit, an upper- and a lower-case
// letter, as random tokens do and paths and words rarely do.
func mixedClasses(s string) bool {
	var digit, upper, lower bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		}
	}
	return digit && upper && lower
}

// isSeparator reports whether r ends a token.
func isSeparator(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(`,;&"'{}[]<>`, r)
}

// collapseSpace turns every run of whitespace or control characters into one
// space, trims both ends and replaces invalid UTF-8 with U+FFFD.
func collapseSpace(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cut shortens s to at most limit bytes on a rune boundary, ending with "…".
func cut(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	const ellipsis = "…"
	tail := ellipsis
	if limit < 2*len(ellipsis) {
		tail = ""
	}
	n := limit - len(tail)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + tail
}
