package proxy

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/airouter/airouter/apierror"
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

// openAIError is the OpenAI-shape error object with the proxy's trail of
// an exhausted request after the four standard fields.
type openAIError struct {
	apierror.OpenAI
	Trail []trailEntry `json:"trail,omitempty"`
}

// anthropicError is the same on /v1/messages, in the Anthropic shape.
type anthropicError struct {
	apierror.Anthropic
	Trail []trailEntry `json:"trail,omitempty"`
}

// errorBody renders an error envelope for the surface.
func errorBody(ep endpoint, status int, msg, code string, trail []trailEntry) []byte {
	var v any
	if ep == epMessages {
		v = struct {
			Type  string         `json:"type"`
			Error anthropicError `json:"error"`
		}{"error", anthropicError{apierror.NewAnthropic(status, msg, code), trail}}
	} else {
		v = struct {
			Error openAIError `json:"error"`
		}{openAIError{apierror.NewOpenAI(status, msg, code), trail}}
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

// NotFound answers with the 404 envelope; the wiring answers with it any
// path that neither the proxy nor the admin API serves.
func NotFound(w http.ResponseWriter, _ *http.Request) {
	writeError(w, 0, http.StatusNotFound, "Not Found", "", nil)
}
