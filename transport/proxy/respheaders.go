package proxy

import (
	"net/http"
	"strings"

	"github.com/airouter/airouter/redact"
)

// notRelayed are the response headers an upstream sends about itself,
// which a client has no use for and which must not reach it, with the
// reason. The one list; README's "What a client sees of the upstream"
// names the same headers.
var notRelayed = map[string]string{
	// Sessions and load-balancer cookies of the operator's account
	// (Cloudflare's __cf_bm, _cfuvid): the client must not hold them.
	"Set-Cookie":  "the upstream's cookies for the operator's account",
	"Set-Cookie2": "the upstream's cookies for the operator's account",
	// Which software and which account answered.
	"Server":                    "the upstream's software",
	"X-Powered-By":              "the upstream's software",
	"Via":                       "the upstream's proxies",
	"Openai-Organization":       "the operator's account at the provider",
	"Openai-Project":            "the operator's account at the provider",
	"Anthropic-Organization-Id": "the operator's account at the provider",
	// Policies and reports for the upstream's own host: relayed, they
	// would apply to the router's host (HSTS pinning it, Alt-Svc
	// advertising HTTP/3 it does not serve, NEL sending browsers' network
	// errors to the provider's collector).
	"Strict-Transport-Security": "the upstream host's policy",
	"Alt-Svc":                   "the upstream host's alternative services",
	"Report-To":                 "the upstream host's report collector",
	"Reporting-Endpoints":       "the upstream host's report collector",
	"Nel":                       "the upstream host's report collector",
	// Another router's headers: its credential, and its trail of a
	// request this router accounts for itself.
	"X-Credential-Name": "a downstream router's credential",
	hdrAttempts:         "this router writes its own",
	hdrTrail:            "this router writes its own",
	hdrDetail:           "this router writes its own",
	// The proxy sets the length of what it writes.
	"Content-Length": "this router sets its own",
}

// notRelayedPrefixes are header name prefixes dropped like notRelayed:
// CDN and service-mesh tracing of the upstream's infrastructure (Cf-Ray,
// Cf-Cache-Status, X-Envoy-Upstream-Service-Time).
var notRelayedPrefixes = [...]string{"Cf-", "X-Envoy-"}

// plainHeaders are relayed headers whose values are known not to be
// secrets (or are provider request ids, which look like tokens): they are
// checked for configured keys only, not for token shapes. SDKs read them:
// content type, rate limits (X-Ratelimit-*, Anthropic-Ratelimit-*, and
// Retry-After), processing time, the provider's request id (which SDKs
// show as the request's id and an operator can look up).
var plainHeaders = map[string]bool{
	"Content-Type": true, "Content-Encoding": true, "Date": true, "Cache-Control": true,
	"Vary": true, "Retry-After": true, "Retry-After-Ms": true, "X-Content-Type-Options": true,
	"Etag": true, "Last-Modified": true, "Expires": true,
	"Openai-Processing-Ms": true, "Openai-Version": true, "Openai-Model": true,
	"X-Request-Id": true, "Request-Id": true, "Access-Control-Expose-Headers": true,
}

// plainPrefixes are name prefixes of plainHeaders.
var plainPrefixes = [...]string{"X-Ratelimit-", "Anthropic-Ratelimit-"}

// relayedResponseHeader reports whether an upstream response header,
// under its canonical name, may reach the client at all.
func relayedResponseHeader(k string) bool {
	if hopByHop(k) {
		return false
	}
	if _, ok := notRelayed[k]; ok {
		return false
	}
	for _, p := range notRelayedPrefixes {
		if strings.HasPrefix(k, p) {
			return false
		}
	}
	return true
}

// copyResponseHeader copies an upstream response's headers for the client,
// minus the connection's own headers, the ones not relayed (notRelayed),
// and any header whose value holds a configured key (s), or, outside
// plainHeaders, anything redact takes for a secret (a provider key, a
// bearer token, a long token, a secret field) or an e-mail address.
func copyResponseHeader(dst, src http.Header, s *secrets) {
	conn := src["Connection"]
	for k, vv := range src {
		if !relayedResponseHeader(k) || listedIn(conn, k) || s.keyed(vv) {
			continue
		}
		if !plainHeader(k) && holdsSecret(vv) {
			continue
		}
		dst[k] = vv
	}
}

func plainHeader(k string) bool {
	if plainHeaders[k] {
		return true
	}
	for _, p := range plainPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// holdsSecret reports whether redact would change one of the values.
func holdsSecret(vv []string) bool {
	for _, v := range vv {
		if redact.N(v, 0) != v {
			return true
		}
	}
	return false
}
