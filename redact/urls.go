package redact

import "strings"

// redactedUser replaces the user info of a URL.
const redactedUser = "xxxxx"

// URLs drops the user info (user:password@, token@, user@) of every URL in
// a comma-separated list, for messages and views of the configuration:
// "nats://a:4222, tls://router:pw@b:4222" becomes
// "nats://a:4222,tls://xxxxx@b:4222". It works on the text, not on a
// parsed URL, so a URL that does not parse (a password with '/', '#' or a
// space in it, no scheme) loses its user info too: everything between the
// scheme and the last '@' of an item is replaced, and what only looks
// like a scheme goes with it. An item with user info is trimmed of
// surrounding spaces; the others are left as they are.
func URLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if !strings.Contains(p, "@") {
			continue
		}
		p = strings.TrimSpace(p)
		at := strings.LastIndexByte(p, '@')
		scheme := ""
		if k := strings.Index(p, "://"); k >= 0 && k < at && isScheme(p[:k]) {
			scheme = p[:k+3]
		}
		parts[i] = scheme + redactedUser + p[at:]
	}
	return strings.Join(parts, ",")
}

// isScheme reports whether s is a URL scheme: a letter, then letters,
// digits, '+', '-' or '.'.
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return false
		}
	}
	return s != ""
}
