package adminapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// authorize admits only the master key, sent as "Authorization: Bearer
// <key>": no header is 401 "master key required", any other shape is 401
// "malformed credentials", and any other key (a client key included) is
// 403 "master key required". Keys are compared as SHA-256 digests in
// constant time; no message echoes the key.
func (a *API) authorize(r *http.Request) error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return &httpError{status: http.StatusUnauthorized, msg: "master key required"}
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return &httpError{status: http.StatusUnauthorized, msg: "malformed credentials"}
	}
	sum := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(sum[:], a.cf().master[:]) != 1 {
		return &httpError{status: http.StatusForbidden, msg: "master key required"}
	}
	return nil
}
