package adminapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/redact"
)

// History is the event log read back, for the views of the past:
// GET /health?at=T, GET /api/bans?at=T and GET /api/timeline. The wiring
// hands it over once with SetHistory; cmd/airouter's adapter folds with
// package incident, the fold `replay -at` prints.
type History interface {
	// StateAt is the state the router had at moment at, folded from the
	// latest checkpoint stored at or before it. A moment the log does not
	// hold (before its first event, or past what its stream discarded)
	// fails with an error that has an EarliestHeld() time.Time method:
	// the earliest moment the log can answer for, zero for none.
	StateAt(ctx context.Context, at time.Time) (*projections.State, error)
	// EventsAfter calls fn, in log order, for the events after st (a
	// state StateAt returned) up to the first one stamped after until.
	// Events of st's last message that st already holds may come first.
	EventsAfter(ctx context.Context, st *projections.State, until time.Time, fn func(domain.Event) error) error
}

// PastLimits bound the views of the past, each a fold of the log.
type PastLimits struct {
	// Views is how many are folded at once; more are answered 429 with
	// Retry-After. 0 means 2.
	Views int
	// Timeout bounds one; past it the answer is 504. 0 means 30 s.
	Timeout time.Duration
}

// The default PastLimits.
const (
	defaultPastViews   = 2
	defaultPastTimeout = 30 * time.Second
	// maxMomentLen bounds a moment's text in a query.
	maxMomentLen = 64
)

// notHeld is a History's error for a moment its log does not hold.
type notHeld interface {
	error
	EarliestHeld() time.Time
}

// SetHistory hands the API the log read back. Call it once, before
// serving; until then (and in replay, which is itself the past) ?at= and
// /api/timeline answer 503.
func (a *API) SetHistory(h History, l PastLimits) {
	if l.Views <= 0 {
		l.Views = defaultPastViews
	}
	if l.Timeout <= 0 {
		l.Timeout = defaultPastTimeout
	}
	a.history, a.pastLimits = h, l
	a.pastSlots = make(chan struct{}, l.Views)
}

// moment reads query parameter name as a moment no later than now (RFC 3339
// or a duration back from now); def is its value when absent.
func moment(q url.Values, name string, now, def time.Time) (time.Time, error) {
	if !q.Has(name) {
		return def, nil
	}
	v := strings.TrimSpace(q.Get(name))
	switch {
	case v == "":
		return time.Time{}, badRequest("%s is empty: give an RFC 3339 time (2026-11-29T03:12:00Z) or a duration back from now (15m)", name)
	case len(v) > maxMomentLen:
		return time.Time{}, badRequest("%s is %d characters long: give an RFC 3339 time (2026-11-29T03:12:00Z) or a duration back from now (15m)", name, len(v))
	}
	t, err := domain.ParseMoment(v, now)
	if err != nil {
		return time.Time{}, badRequest("%s: %s", name, redact.String(err.Error()))
	}
	if t.IsZero() {
		// The log reads the zero time as no bound at all (now).
		return time.Time{}, badRequest("%s %s is the zero time, before any log: give a later moment", name, strconv.Quote(v))
	}
	if t.After(now) {
		return time.Time{}, badRequest("%s %s is in the future: the router's clock reads %s", name,
			t.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	}
	return t, nil
}

// past runs fn as one view of the past: within the cap on concurrent
// views (429 beyond it) and the timeout (504 past it). A moment the log
// does not hold is 404 naming the earliest one it can answer for.
func (a *API) past(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	if a.history == nil {
		return &httpError{status: http.StatusServiceUnavailable, msg: "this router keeps no history to answer " + what + " from"}
	}
	select {
	case a.pastSlots <- struct{}{}:
		defer func() { <-a.pastSlots }()
	default:
		return &httpError{status: http.StatusTooManyRequests, retryAfter: "1",
			msg: fmt.Sprintf("%d views of the past are being folded already; retry in a moment", cap(a.pastSlots))}
	}
	ctx, cancel := context.WithTimeout(ctx, a.pastLimits.Timeout)
	defer cancel()
	err := fn(ctx)
	var nh notHeld
	switch {
	case err == nil:
		return nil
	case errors.As(err, new(*httpError)):
		return err
	case errors.As(err, &nh):
		return &httpError{status: http.StatusNotFound, msg: redact.String(nh.Error())}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &httpError{status: http.StatusGatewayTimeout,
			msg: fmt.Sprintf("%s took longer than %s to fold from the log", what, a.pastLimits.Timeout)}
	}
	a.log.Error("view of the past failed", "view", what, "error", redact.String(err.Error()))
	return &httpError{status: http.StatusServiceUnavailable, msg: "cannot read the event log: " + redact.String(err.Error())}
}

// serveAt answers path (/health or /api/bans) with ?at=T: the document the
// router served at T, folded from the log and rendered by PastView.
func (a *API) serveAt(w http.ResponseWriter, r *http.Request, path string) error {
	at, err := moment(r.URL.Query(), "at", a.now().UTC(), time.Time{})
	if err != nil {
		return err
	}
	return a.past(r.Context(), path+" at "+at.Format(time.RFC3339Nano), func(ctx context.Context) error {
		st, err := a.history.StateAt(ctx, at)
		if err != nil {
			return err
		}
		body, status, err := PastView(a.cf().deps, st.Snapshot(), at, path)
		if err != nil {
			return err
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_, _ = w.Write(body)
		return nil
	})
}

// PastView is what the API built from d answers for path (/health,
// /api/bans) over snap as the router served it at moment at: its clock
// fixed at at, the log as far as snap (connected, its last position the
// snapshot's, no lag), and no proxy, so no live rates (0) and no models
// learned other than those the log names. Both `replay -at` and the ?at=
// views render the past through it. The status is the document's own
// (/health: 503 when no credential was usable).
func PastView(d Deps, snap *projections.Snapshot, at time.Time, path string) ([]byte, int, error) {
	var key [16]byte
	_, _ = rand.Read(key[:])
	d.MasterKey = hex.EncodeToString(key[:])
	d.Snapshot = func() *projections.Snapshot { return snap }
	d.WaitFor = func(context.Context, uint64) error { return errPastReadOnly }
	d.Publish = func(context.Context, domain.Event) (uint64, error) { return 0, errPastReadOnly }
	d.Clock = func() time.Time { return at }
	d.LogStatus = func() LogStatus { return LogStatus{Connected: true, LastSeq: snap.Seq()} }
	d.Registry, d.Logger = nil, hclog.NewNullLogger()
	api, err := New(d)
	if err != nil {
		return nil, 0, fmt.Errorf("build the admin API over the state at %s: %w", at.Format(time.RFC3339Nano), err)
	}
	req, err := http.NewRequest(http.MethodGet, path, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+d.MasterKey)
	rec := &bodyRecorder{header: http.Header{}}
	api.Handler().ServeHTTP(rec, req)
	if rec.status != http.StatusOK && !(path == "/health" && rec.status == http.StatusServiceUnavailable) {
		return nil, 0, fmt.Errorf("%s at %s answered %d: %s", path, at.Format(time.RFC3339Nano), rec.status, bytes.TrimSpace(rec.body.Bytes()))
	}
	return rec.body.Bytes(), rec.status, nil
}

// errPastReadOnly answers any change asked of a view of the past.
var errPastReadOnly = errors.New("a view of the past is read-only")

// bodyRecorder is the http.ResponseWriter PastView reads an answer from.
type bodyRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *bodyRecorder) Header() http.Header { return r.header }

func (r *bodyRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *bodyRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(b)
}

// onlyParams is a 400 naming the first query parameter of q that path does
// not take, or one of once given more than once; nil when q is fine.
func onlyParams(q url.Values, path string, takes, once []string) error {
	for name, vs := range q {
		if !slices.Contains(takes, name) {
			if len(takes) == 0 {
				return badRequest("unknown query parameter %q on %s: it takes none", clip(name), path)
			}
			return badRequest("unknown query parameter %q on %s: it takes %s", clip(name), path, strings.Join(takes, ", "))
		}
		if len(vs) > 1 && slices.Contains(once, name) {
			return badRequest("query parameter %s is given %d times on %s: give it once", name, len(vs), path)
		}
	}
	return nil
}
