package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// request body errors, as the client sees them.
var (
	errBodyTooLarge = errors.New("Request Entity Too Large")
	errBodyRead     = errors.New("Failed to read request body")
	errNotJSON      = errors.New("request body must be a JSON object")
	errNoModel      = errors.New("model field is required")
)

// clientBody is what the proxy reads from a request body.
type clientBody struct {
	raw []byte
	// model is the requested model and raw[ms:me] its JSON token.
	model  string
	ms, me int
	stream bool
	// hasStreamOptions reports a top-level stream_options member.
	hasStreamOptions bool
}

// parseBody finds the top-level model and stream members.
func parseBody(b []byte) (clientBody, error) {
	cb := clientBody{raw: b, ms: -1}
	at, ok := walkMembers(b, func(key []byte, vs, ve int) bool {
		switch string(key) {
		case "model":
			cb.ms, cb.me = vs, ve
		case "stream":
			cb.stream = string(b[vs:ve]) == "true"
		case "stream_options":
			cb.hasStreamOptions = true
		}
		return true
	})
	if !ok {
		return cb, notJSON(b, at)
	}
	if cb.ms < 0 {
		return cb, errNoModel
	}
	model, isString := stringValue(b[cb.ms:cb.me])
	if !isString || model == "" {
		return cb, errNoModel
	}
	cb.model = model
	return cb, nil
}

// notJSON is the error for a body the walker refused at offset at: the
// problem as encoding/json names it (read only on this error path), with
// the offset; errors.Is(err, errNotJSON) holds.
func notJSON(b []byte, at int) error {
	var v json.RawMessage // checked, not decoded
	var se *json.SyntaxError
	err := json.Unmarshal(b, &v)
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%w: %v (at byte %d)", errNotJSON, err, se.Offset)
	case err != nil:
		return fmt.Errorf("%w: %v", errNotJSON, err)
	case len(bytes.TrimSpace(b)) > 0 && bytes.TrimSpace(b)[0] != '{':
		return errNotJSON // valid JSON, but not an object
	}
	return fmt.Errorf("%w: invalid JSON at byte %d", errNotJSON, at+1)
}

// includeUsage adds "stream_options":{"include_usage":true} to a streamed
// request that set no stream options, so the stream ends with a usage
// chunk that the tpm windows are charged from.
func (cb *clientBody) includeUsage() {
	end := len(bytes.TrimRight(cb.raw, " \t\r\n")) - 1
	if end <= cb.me || cb.raw[end] != '}' {
		return
	}
	const member = `,"stream_options":{"include_usage":true}`
	out := make([]byte, 0, len(cb.raw)+len(member))
	out = append(out, cb.raw[:end]...)
	out = append(out, member...)
	out = append(out, cb.raw[end:]...)
	cb.raw = out
}

// withModel returns the body with the model token replaced by send (a
// JSON-encoded string); every other byte is kept. When send equals the
// current token the body is returned as is.
func (cb *clientBody) withModel(send []byte) []byte {
	if bytes.Equal(cb.raw[cb.ms:cb.me], send) {
		return cb.raw
	}
	out := make([]byte, 0, len(cb.raw)-(cb.me-cb.ms)+len(send))
	out = append(out, cb.raw[:cb.ms]...)
	out = append(out, send...)
	return append(out, cb.raw[cb.me:]...)
}
