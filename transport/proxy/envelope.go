package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/airouter/airouter/domain"
)

// trailEntry is one hop in an exhaustion body.
type trailEntry struct {
	Credential string       `json:"credential"`
	Model      string       `json:"model"`
	Status     int          `json:"status,omitempty"`
	Class      domain.Class `json:"class"`
	MS         int64        `json:"ms"`
}

// apiError is the body of every error the router itself writes:
// {"error":{"message","type","param","code"}} for OpenAI surfaces.
type apiError struct {
	Message string       `json:"message"`
	Type    string       `json:"type"`
	Param   *string      `json:"param"`
	Code    *string      `json:"code"`
	Trail   []trailEntry `json:"trail,omitempty"`
}

// anthropicError is the same error on /v1/messages, in the Anthropic
// shape {"type":"error","error":{"type","message"}}.
type anthropicError struct {
	Type    string       `json:"type"`
	Message string       `json:"message"`
	Code    string       `json:"code,omitempty"`
	Trail   []trailEntry `json:"trail,omitempty"`
}

// openAIErrorType maps a status to the envelope type, as the router we
// replace does.
func openAIErrorType(status int) string {
	switch status {
	case 400, 405, 413:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "insufficient_quota"
	case 403:
		return "permission_denied"
	case 404:
		return "not_found_error"
	case 408, 504:
		return "timeout_error"
	case 429:
		return "rate_limit_error"
	case 502:
		return "api_error"
	}
	return "server_error"
}

func anthropicErrorType(status int) string {
	switch status {
	case 400, 405:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// errorBody renders an error envelope for the surface.
func errorBody(ep endpoint, status int, msg, code string, trail []trailEntry) []byte {
	var v any
	if ep == epMessages {
		v = struct {
			Type  string         `json:"type"`
			Error anthropicError `json:"error"`
		}{"error", anthropicError{Type: anthropicErrorType(status), Message: msg, Code: code, Trail: trail}}
	} else {
		e := apiError{Message: msg, Type: openAIErrorType(status), Trail: trail}
		if code != "" {
			e.Code = &code
		}
		v = struct {
			Error apiError `json:"error"`
		}{e}
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Only strings and ints go in; this cannot fail, but never
		// answer with nothing.
		return []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`)
	}
	return append(b, '\n')
}

// writeError writes an error envelope. The message must already be free of
// secrets.
func writeError(w http.ResponseWriter, ep endpoint, status int, msg, code string, trail []trailEntry) {
	b := errorBody(ep, status, msg, code, trail)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// NotFound answers an unknown path with the 404 envelope, as the router we
// replace does; the wiring may use it for paths outside /v1.
func NotFound(w http.ResponseWriter, _ *http.Request) {
	writeError(w, 0, http.StatusNotFound, "Not Found", "", nil)
}
