package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/airouter/airouter/apierror"
	"github.com/airouter/airouter/redact"
)

// maxBodyBytes bounds an admin request body.
const maxBodyBytes = 64 << 10

// httpError is a failure with the status it answers with. Its message is
// shown to the client, so it never holds a secret.
type httpError struct {
	status int
	msg    string
	// retryAfter is the Retry-After header's value, "" for none.
	retryAfter string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(apierror.OpenAIBody{Error: apierror.NewOpenAI(status, "encode the response", "")})
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// writeError answers with the OpenAI-shape error envelope, the one the
// proxy writes: {"error":{"message","type","param":null,"code":null}}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apierror.OpenAIBody{Error: apierror.NewOpenAI(status, msg, "")})
}

// admin wraps a master-key handler: the method is checked first (405 with
// Allow), then the key, then fn runs; an *httpError it returns is written
// with its status, anything else is a logged 500.
func (a *API) admin(fn func(w http.ResponseWriter, r *http.Request) error, methods ...string) http.Handler {
	allow := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowed(r.Method, methods) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
			return
		}
		err := a.authorize(r)
		if err == nil {
			err = fn(w, r)
		}
		if err != nil {
			a.fail(w, r, err)
		}
	})
}

// fail answers a handler's error: an *httpError with its status (and its
// Retry-After), anything else as a logged 500.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	if !errors.As(err, &he) {
		a.log.Error("admin request failed", "path", r.URL.Path, "error", redact.String(err.Error()))
		he = &httpError{status: http.StatusInternalServerError, msg: "internal error"}
	}
	if he.status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="airouter admin"`)
	}
	if he.retryAfter != "" {
		w.Header().Set("Retry-After", he.retryAfter)
	}
	writeError(w, he.status, he.msg)
}

func allowed(method string, methods []string) bool {
	for _, m := range methods {
		if method == m {
			return true
		}
	}
	return false
}

// decodeBody reads a JSON object of at most maxBodyBytes into dst,
// rejecting unknown fields and anything after the object.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return &httpError{status: http.StatusRequestEntityTooLarge,
				msg: fmt.Sprintf("request body is larger than %d KiB", maxBodyBytes>>10)}
		}
		return badRequest("read the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return badRequest("request body required")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return badRequest("invalid JSON: %s", redact.String(err.Error()))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("invalid JSON: unexpected data after the object")
	}
	return nil
}
