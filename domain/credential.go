package domain

import (
	"errors"
	"net/url"
	"strings"
)

// CredentialType is the wire format an upstream speaks. Config, the proxy
// and the admin API share these names.
type CredentialType string

// The credential types airouter speaks.
const (
	// CredentialOpenAI is any OpenAI-compatible upstream, vLLM included.
	CredentialOpenAI CredentialType = "openai"
	// CredentialAnthropic is the Anthropic Messages API.
	CredentialAnthropic CredentialType = "anthropic"
	// CredentialProxy is another router. It is sent the public model name,
	// its models are learned at runtime, and outcomes never ban it.
	CredentialProxy CredentialType = "proxy"
)

// Valid reports whether t is one of the types airouter speaks.
func (t CredentialType) Valid() bool {
	switch t {
	case CredentialOpenAI, CredentialAnthropic, CredentialProxy:
		return true
	}
	return false
}

// ValidCredentialName reports whether name may name a credential: one or
// more letters, digits, '_' and '-'. A credential name is a token of NATS
// subjects, a metric label and a log field, so nothing else is allowed.
func ValidCredentialName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// The ways a credential's name can be wrong. Each reads after the name it
// describes, so every caller words its message alike.
var (
	ErrCredentialNameEmpty = errors.New("is empty")
	ErrCredentialNameChars = errors.New("may contain only letters, digits, '_' and '-'")
	ErrCredentialNameTaken = errors.New("names another credential too")
)

// CheckCredentialName says what is wrong with name as the name of one more
// credential of a pool whose names so far are in seen: one of the
// ErrCredentialName values, or nil, in which case name is added to seen.
// Config, the proxy and the admin API check their credentials with it.
func CheckCredentialName(name string, seen map[string]bool) error {
	switch {
	case name == "":
		return ErrCredentialNameEmpty
	case !ValidCredentialName(name):
		return ErrCredentialNameChars
	case seen[name]:
		return ErrCredentialNameTaken
	}
	seen[name] = true
	return nil
}

// The ways a base URL can be wrong. Each reads after the URL it describes
// (`"ftp://x" is not http(s)`), so every caller words its message alike.
var (
	ErrBaseURLNotURL   = errors.New("is not a URL")
	ErrBaseURLScheme   = errors.New("is not http(s)")
	ErrBaseURLNoHost   = errors.New("has no host")
	ErrBaseURLHasQuery = errors.New("has a query or fragment")
)

// CleanBaseURL checks an upstream's base URL, http(s)://host[:port][/path]
// without a query or fragment, and returns it without surrounding spaces
// and without a trailing "/v1" or "/": the request path, which starts with
// /v1, is appended to it. The error is one of the ErrBaseURL values.
func CleanBaseURL(raw string) (string, error) {
	s := strings.TrimSpace(raw)
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", ErrBaseURLNotURL
	case u.Scheme != "http" && u.Scheme != "https":
		return "", ErrBaseURLScheme
	case u.Host == "":
		return "", ErrBaseURLNoHost
	case u.RawQuery != "" || u.Fragment != "":
		return "", ErrBaseURLHasQuery
	}
	s = strings.TrimRight(s, "/")
	return strings.TrimRight(strings.TrimSuffix(s, "/v1"), "/"), nil
}
