package proxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorize checks the client's key: "Authorization: Bearer <key>", or
// "x-api-key: <key>" as Anthropic SDKs send it. The key must be the master
// key or one of the client keys. Keys are compared as SHA-256 digests in
// constant time, and every configured key is compared, so neither the
// length nor the position of a match shows in the timing. The returned
// message never echoes the key. master reports whether the key is the
// master key (keys[0]), which is never forwarded upstream. keys are the
// digests of the conf the request started with.
func authorize(r *http.Request, keys [][sha256.Size]byte) (msg string, master, ok bool) {
	token, msg := bearer(r)
	if msg != "" {
		return msg, false, false
	}
	sum := sha256.Sum256([]byte(token))
	match := 0
	for i := range keys {
		match |= subtle.ConstantTimeCompare(sum[:], keys[i][:])
	}
	if match != 1 {
		return "Invalid API key", false, false
	}
	return "", subtle.ConstantTimeCompare(sum[:], keys[0][:]) == 1, true
}

func bearer(r *http.Request) (token, problem string) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if k := r.Header.Get("X-Api-Key"); k != "" {
			return k, ""
		}
		return "", "Missing Authorization header"
	}
	const prefix = "Bearer "
	if len(h) <= len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return "", "Invalid Authorization header format"
	}
	return strings.TrimSpace(h[len(prefix):]), ""
}
