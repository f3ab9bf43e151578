package proxy

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/airouter/airouter/domain"
)

// Handler serves the /v1 surfaces. GET /v1/models needs no key; every
// other route needs the master key or a client key. Any other path gets the
// 404 envelope.
func (p *Proxy) Handler() http.Handler { return http.HandlerFunc(p.serveHTTP) }

func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var ep endpoint
	switch r.URL.Path {
	case "/v1/models":
		p.serveModels(w, r)
		return
	case "/v1/chat/completions":
		ep = epChat
	case "/v1/completions":
		ep = epCompletions
	case "/v1/embeddings":
		ep = epEmbeddings
	case "/v1/responses":
		ep = epResponses
	case "/v1/messages":
		ep = epMessages
	default:
		NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, ep, http.StatusMethodNotAllowed, "Method Not Allowed", "", nil)
		return
	}
	p.serveProxied(w, r, ep)
}

// serveProxied serves a proxied request, inside a request span when
// there is a Tracer.
func (p *Proxy) serveProxied(w http.ResponseWriter, r *http.Request, ep endpoint) {
	if p.tracer != nil {
		p.serveTraced(w, r, ep)
		return
	}
	p.serve(w, r, ep, nil)
}

// inflight is what serve holds for one request, in one allocation: the
// writer that renews its write deadline, the watch over its body read and
// the request the failover loop carries.
type inflight struct {
	dw    deadlineWriter
	watch bodyWatch
	rq    request
}

// serve authenticates and reads a request, resolves its model and hands
// it to the failover loop. With traced non-nil, it is set to the request
// once there is one.
func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, ep endpoint, traced **request) {
	in := new(inflight)
	w = in.dw.wrap(w, p.writeTimeout)
	if dw, ok := w.(*deadlineWriter); ok {
		// net/http writes the end of the response (a stream's last
		// chunk marker) after the handler returns, past the wrapper.
		defer dw.renew()
	}
	// The request keeps the table, and so the conf, it started with
	// through a reload.
	t := p.table.Load()
	msg, master, ok := authorize(r, t.conf.keys)
	if !ok {
		writeError(w, ep, http.StatusUnauthorized, msg, "invalid_api_key", nil)
		return
	}
	raw, held, err := p.readBody(w, r, &in.watch)
	if err != nil {
		writeBodyError(w, ep, err)
		return
	}
	defer p.budget.release(held)
	cb, err := parseBody(raw)
	if err != nil {
		writeError(w, ep, http.StatusBadRequest, err.Error(), "", nil)
		return
	}
	if err := domain.CheckModelName(cb.model); err != nil {
		writeError(w, ep, http.StatusBadRequest, "model "+err.Error(), "", nil)
		return
	}
	model := cb.model
	if real, ok := t.conf.aliases[model]; ok {
		model = real
	}
	rq := &in.rq
	*rq = request{
		id:       p.requestID(),
		ep:       ep,
		start:    p.clock.Now(),
		body:     cb,
		model:    model,
		settings: p.settings(),
		conf:     t.conf,
		// A keyless proxy credential may pass a client key on to the
		// router behind it, never the master key.
		forwardAuth: !master,
	}
	rq.hops = rq.hopBuf[:0]
	if traced != nil {
		*traced = rq
	}
	w.Header()[hdrRequestID] = []string{rq.id}
	pl := p.poolIn(t, model)
	if pl == nil || pl.eps&ep == 0 {
		w.Header()[hdrAttempts] = attemptValues[0]
		msg := "The model " + strconv.Quote(model) + " is not served by any credential"
		if pl != nil {
			msg += " on " + r.URL.Path
		}
		writeError(w, ep, http.StatusNotFound, msg, "model_not_found", nil)
		return
	}
	rq.pool = pl
	rq.skip = newIdxSet(len(pl.cands))
	if cb.stream && (ep == epChat || ep == epCompletions) && !cb.hasStreamOptions {
		rq.body.includeUsage()
	}
	if model != cb.model {
		rq.public, _ = json.Marshal(model)
	}
	p.failover(w, r, rq)
}

// requestIDPrefix is a random per-process prefix for request ids.
func requestIDPrefix() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "airouter"
	}
	return hex.EncodeToString(b[:])
}

func (p *Proxy) requestID() string {
	buf := make([]byte, 0, len(p.reqPrefix)+14)
	buf = append(buf, p.reqPrefix...)
	buf = append(buf, '-')
	buf = strconv.AppendUint(buf, p.reqSeq.Add(1), 36)
	return string(buf)
}

// modelEntry is one item of GET /v1/models.
type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func (p *Proxy) serveModels(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, 0, http.StatusMethodNotAllowed, "Method Not Allowed", "", nil)
		return
	}
	models := p.Models()
	list := struct {
		Object string       `json:"object"`
		Data   []modelEntry `json:"data"`
	}{Object: "list", Data: make([]modelEntry, 0, len(models))}
	for _, m := range models {
		list.Data = append(list.Data, modelEntry{ID: m, Object: "model", Created: p.created, OwnedBy: "airouter"})
	}
	b, _ := json.Marshal(list)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(append(b, '\n'))
	}
}
