package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airouter/airouter/redact"
)

// Reload re-reads the config file and applies it; it returns the status
// and the JSON body of the answer (the wiring decides both: it knows the
// config). The API only authenticates, counts and writes.
type Reload func(ctx context.Context) (status int, body any)

// Reloads counts config reloads by result ("ok", "error") as
// airouter_config_reloads_total; a reload by signal counts as one by
// POST /api/reload does.
type Reloads struct {
	total *prometheus.CounterVec
}

// NewReloads registers airouter_config_reloads_total, with both results
// at 0, on the API's registry.
func (a *API) NewReloads() (*Reloads, error) {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airouter_config_reloads_total",
		Help: "Config reloads (SIGHUP or POST /api/reload) by result: ok applied the file, error changed nothing.",
	}, []string{"result"})
	if err := a.registry.Register(v); err != nil {
		return nil, fmt.Errorf("register airouter_config_reloads_total: %w", err)
	}
	v.WithLabelValues("ok")
	v.WithLabelValues("error")
	return &Reloads{total: v}, nil
}

// Count counts one reload.
func (r *Reloads) Count(ok bool) {
	res := "error"
	if ok {
		res = "ok"
	}
	r.total.WithLabelValues(res).Inc()
}

// RegisterReload adds POST /api/reload (master key) to r, answered by
// reload.
func (a *API) RegisterReload(r *mux.Router, reload Reload) {
	r.Handle("/api/reload", a.admin(func(w http.ResponseWriter, req *http.Request) error {
		if err := onlyParams(req.URL.Query(), "/api/reload", nil, nil); err != nil {
			return err
		}
		if err := noBody(w, req); err != nil {
			return err
		}
		status, body := reload(req.Context())
		writeJSON(w, status, body)
		return nil
	}, http.MethodPost))
}

// noBody accepts an empty body or an empty JSON object ({}): POST
// /api/reload takes no fields; one given is a 400 naming it.
func noBody(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		return badRequest("read the request body: %v", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var none struct{}
	if err := dec.Decode(&none); err != nil {
		return badRequest("POST /api/reload takes no body, or an empty JSON object: %s", redact.N(err.Error(), 200))
	}
	if dec.More() {
		return badRequest("POST /api/reload takes no body, or an empty JSON object: data after the object")
	}
	return nil
}
