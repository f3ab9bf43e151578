package adminapi

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/redact"
)

// unbenchRequest is the body of POST /api/unbench.
type unbenchRequest struct {
	Model string `json:"model"`
}

// unbenchResponse answers POST /api/unbench with the bench it lifted, as
// this replica saw it just before.
type unbenchResponse struct {
	Model       string    `json:"model"`
	Until       time.Time `json:"until"`
	Failures    int       `json:"failures"`
	Credentials []string  `json:"credentials"`
	Reason      string    `json:"reason"`
}

// unbench handles POST /api/unbench: it publishes a model.unbenched event by
// an admin and answers, once it is applied (the model is routed again
// here), with the bench it lifted. A model not benched now is 404 and
// publishes nothing: there is nothing to lift, and a bench that ended needs
// no event.
func (a *API) unbench(w http.ResponseWriter, r *http.Request) error {
	var req unbenchRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	model := strings.TrimSpace(req.Model)
	if model == "" {
		return badRequest("model is required")
	}
	if err := domain.CheckModelName(model); err != nil {
		return badRequest("model %s", err)
	}

	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	now := a.now().UTC()
	b, benched := a.current().Benched(now)[model]
	if !benched {
		return &httpError{status: http.StatusNotFound, msg: fmt.Sprintf("model %q is not benched", redact.N(model, 64))}
	}
	ev := domain.Event{
		V: domain.SchemaVersion, Kind: domain.KindModelUnbenched, ID: a.newID(), At: now,
		Unbench: &domain.Unbench{Model: model, By: domain.LiftedByAdmin},
	}
	if err := a.commit(r.Context(), ev, "unbench"); err != nil {
		return err
	}
	creds := b.Credentials
	if creds == nil {
		creds = []string{}
	}
	writeJSON(w, http.StatusOK, unbenchResponse{Model: model, Until: b.Until, Failures: b.Failures,
		Credentials: creds, Reason: b.Reason})
	return nil
}
