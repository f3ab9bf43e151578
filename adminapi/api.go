package adminapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// Credential is one configured credential, as /health shows it.
type Credential struct {
	Name       string
	Type       domain.CredentialType
	IsFallback bool
	// Weight is the selection weight; 0 means 1.
	Weight int
	// RPM and TPM are the configured limits; 0 or -1 means unlimited.
	RPM, TPM int
}

// Pair is one model a credential serves: configured, or learned from a
// proxy credential's upstream.
type Pair struct {
	Credential, Model string
	// Weight overrides the credential's weight for this model when > 0.
	Weight int
	// RPM and TPM limit the pair; 0 or -1 means unlimited.
	RPM, TPM int
}

// Key names the pair.
func (p Pair) Key() domain.Key { return domain.Key{Credential: p.Credential, Model: p.Model} }

// LogStatus is the event log's state, as the wiring reads it.
type LogStatus struct {
	// Connected is true when the log can take events now: connected, and
	// its stream answers.
	Connected bool
	// LastSeq is the stream's last sequence; the lag is LastSeq minus the
	// sequence the current snapshot reflects.
	LastSeq uint64
	// Published, Dropped and Failed count outcome publishes since start.
	Published, Dropped, Failed uint64
	// Pending counts outcome events waiting to be published (queued, or
	// held while the log is unreachable).
	Pending int
	// LastError is the most recent publish or connection error.
	LastError string
	// StoreFault names why the log's store cannot write ("store full:
	// insufficient resources"), "" while it writes; /health is degraded
	// while it is set.
	StoreFault string
	// MissingEvents counts the stream messages the log lost before this
	// process started (a damaged store), from MissingFromSeq on; /health
	// is degraded while it is not 0.
	MissingEvents, MissingFromSeq uint64
	// Replicas are the routers heard from on the log lately (replicas.go);
	// ReplicaConflict, when set, says another live process uses this
	// router's replica id, and /health is degraded while it is.
	Replicas        []ReplicaHealth
	ReplicaConflict string
	// ServerProcess reports whether the embedded server runs in a process
	// of its own; ServerPID is that process (0 while none serves), and
	// ServerRestarts counts the times it was started again after it
	// exited.
	ServerProcess  bool
	ServerPID      int
	ServerRestarts uint64
}

// Deps is everything the admin surface needs, given once to New. The
// wiring (cmd/airouter) fills it from config, the projections and the log.
type Deps struct {
	// MasterKey is the only key the admin endpoints accept. Required.
	MasterKey string
	// Credentials are the configured credentials, in config order. Bans
	// may only name these.
	Credentials []Credential
	// ConfiguredPairs are the pairs config routes. /health and /metrics
	// show them, the models proxy credentials learned (Traffic) and the
	// pairs the log names.
	ConfiguredPairs []Pair

	// Snapshot returns the current projection snapshot. Required.
	Snapshot func() *projections.Snapshot
	// WaitFor returns once the snapshot reflects log position seq
	// (projections.Live.WaitFor). Required.
	WaitFor func(ctx context.Context, seq uint64) error
	// Publish writes a control event synchronously, de-duplicated by its
	// ID, and returns its log position (eventlog.Log.PublishControl).
	// Required.
	Publish func(ctx context.Context, ev domain.Event) (uint64, error)

	// Watched reports whether Fail2Ban counts status for the credential;
	// /health shows only those counters. Nil shows every counter.
	Watched func(credential string, status int) bool
	// FilePolicy returns the fingerprint of this replica's own ban policy
	// (its config file's, domain.PolicyFingerprint), which /health compares
	// with the policy in force; nil leaves the file out.
	FilePolicy func() string
	// LogStatus reports the event log's state; nil reports nothing but the
	// applied sequence, and /health is then never "degraded".
	LogStatus func() LogStatus
	// DefaultSettings are the failover settings from config, in force
	// until an operator changes them.
	DefaultSettings domain.FallbackSettings

	// Registry receives every metric; nil makes a fresh one with the
	// process and Go runtime collectors (see API.Registry).
	Registry *prometheus.Registry
	// Logger receives the ban, unban, bench and settings lines and the
	// handlers' errors; nil discards them.
	Logger hclog.Logger
	// Clock is nil for time.Now.
	Clock func() time.Time
	// NewID returns a fresh, unique event id for an admin change; nil uses
	// "admin/" and 96 random bits.
	NewID func() string
	// ChangeTimeout bounds an admin change (ban, unban, settings) from
	// publishing its event to this replica having applied it; past it the
	// change answers 503. 0 means 10 s.
	ChangeTimeout time.Duration
}

// defaultChangeTimeout bounds an admin change when Deps.ChangeTimeout is 0.
const defaultChangeTimeout = 10 * time.Second

// Traffic is what the proxy counts while it routes; *proxy.Proxy
// satisfies it. The wiring builds the proxy after the admin API (the proxy
// reads the API's Settings and Metrics) and hands it over with SetTraffic.
type Traffic interface {
	// Usage is the current requests and tokens per minute of a credential
	// (model "") or of a pair.
	Usage(credential, model string) (rpm, tpm int)
	// Rejections counts, by reason, the candidates selection skipped
	// since start.
	Rejections() map[string]uint64
	// Learned lists, by credential, the models proxy credentials learned
	// from their upstream.
	Learned() map[string][]string
	// Unkept counts, by kind ("pools", "pairs"), what the proxy's bounds
	// on client-chosen model names served without keeping.
	Unkept() map[string]uint64
}

// API serves the operators' surface. It is safe for concurrent use.
type API struct {
	// conf holds what config determines; Reload swaps it (reload.go).
	conf atomic.Pointer[conf]
	// traffic is set once by SetTraffic, before serving; nil reports no
	// usage, no rejections and no learned models.
	traffic   Traffic
	snapshot  func() *projections.Snapshot
	waitFor   func(ctx context.Context, seq uint64) error
	publish   func(ctx context.Context, ev domain.Event) (uint64, error)
	logStatus func() LogStatus
	noLog     bool // LogStatus was nil: no log state to judge
	registry  *prometheus.Registry
	metrics   *Metrics
	labels    *modelLabels
	log       hclog.Logger
	now       func() time.Time
	newID     func() string
	timeout   time.Duration

	// writeMu serialises this replica's admin changes, so an unban's count
	// and a partial settings change read the state their event replaces.
	writeMu sync.Mutex
	empty   *projections.Snapshot

	// deps are the dependencies New was given: PastView renders the
	// views of the past with them.
	deps Deps
	// history, set once by SetHistory, answers the views of the past;
	// pastSlots holds one token per view being folded.
	history    History
	pastLimits PastLimits
	pastSlots  chan struct{}
}

// New checks the dependencies and registers the metrics.
func New(d Deps) (*API, error) {
	if err := validate(d); err != nil {
		return nil, err
	}
	a := &API{
		snapshot:  d.Snapshot,
		waitFor:   d.WaitFor,
		publish:   d.Publish,
		logStatus: d.LogStatus,
		registry:  d.Registry,
		log:       d.Logger,
		now:       d.Clock,
		newID:     d.NewID,
		timeout:   d.ChangeTimeout,
		empty:     projections.NewState().Snapshot(),
		deps:      d,
	}
	a.conf.Store(newConf(d))
	if a.logStatus == nil {
		a.noLog = true
		a.logStatus = func() LogStatus { return LogStatus{} }
	}
	if a.log == nil {
		a.log = hclog.NewNullLogger()
	}
	a.log = a.log.Named("admin")
	if a.now == nil {
		a.now = time.Now
	}
	if a.newID == nil {
		a.newID = randomID
	}
	if a.timeout <= 0 {
		a.timeout = defaultChangeTimeout
	}
	if a.registry == nil {
		a.registry = prometheus.NewRegistry()
		if err := registerRuntime(a.registry); err != nil {
			return nil, err
		}
	}
	a.labels = newModelLabels(d.ConfiguredPairs)
	m, err := newMetrics(a.registry, a.labels)
	if err != nil {
		return nil, err
	}
	a.metrics = m
	if err := a.registry.Register(&collector{a: a}); err != nil {
		return nil, fmt.Errorf("register the snapshot metrics: %w", err)
	}
	return a, nil
}

func validate(d Deps) error {
	var errs []error
	if d.MasterKey == "" {
		errs = append(errs, errors.New("a master key is required"))
	}
	if d.Snapshot == nil || d.WaitFor == nil || d.Publish == nil {
		errs = append(errs, errors.New("Snapshot, WaitFor and Publish are required"))
	}
	seen := make(map[string]bool, len(d.Credentials))
	for i, c := range d.Credentials {
		if err := domain.CheckCredentialName(c.Name, seen); err != nil {
			errs = append(errs, fmt.Errorf("credential %d: name %q %w", i, c.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("build the admin API: %w", errors.Join(errs...))
	}
	return nil
}

// Register adds the operators' routes to r: GET /health, GET /vhealth,
// GET /metrics, POST /api/ban, POST /api/unban, POST /api/unbench,
// GET /api/bans, GET /api/timeline and
// GET/PUT /api/fallback. Methods are checked by the handlers, so a wrong
// one gets 405 with Allow rather than a 404.
func (a *API) Register(r *mux.Router) {
	r.Handle("/health", http.HandlerFunc(a.serveHealth))
	r.Handle("/vhealth", http.HandlerFunc(serveDashboard))
	r.Handle("/metrics", a.metricsHandler())
	r.Handle("/api/ban", a.admin(a.ban, http.MethodPost))
	r.Handle("/api/unban", a.admin(a.unban, http.MethodPost))
	r.Handle("/api/unbench", a.admin(a.unbench, http.MethodPost))
	r.Handle("/api/bans", a.admin(a.listBans, http.MethodGet))
	r.Handle("/api/timeline", http.HandlerFunc(a.serveTimeline))
	r.Handle("/api/fallback", a.admin(a.fallback, http.MethodGet, http.MethodPut))
}

// Handler is a router holding only the operators' routes.
func (a *API) Handler() http.Handler {
	r := mux.NewRouter()
	a.Register(r)
	return r
}

// Settings are the failover settings in force: the last ones an operator
// set, else the defaults from config. The proxy reads them per request.
func (a *API) Settings() domain.FallbackSettings {
	if s, ok := a.current().Settings(); ok {
		return s
	}
	return a.cf().defaults
}

// SetTraffic hands the API what the proxy counts. Call it once, before
// serving; until then (and in replay, which has no proxy) usage and
// rejections read zero and no learned model is shown.
func (a *API) SetTraffic(t Traffic) { a.traffic = t }

func (a *API) usage(credential, model string) (rpm, tpm int) {
	if a.traffic == nil {
		return 0, 0
	}
	return a.traffic.Usage(credential, model)
}

func (a *API) unkept() map[string]uint64 {
	if a.traffic == nil {
		return nil
	}
	return a.traffic.Unkept()
}

func (a *API) rejects() map[string]uint64 {
	if a.traffic == nil {
		return nil
	}
	return a.traffic.Rejections()
}

// servedPairs are the configured pairs, then the models proxy credentials
// learned, with the credential's weight and no pair limits.
func (a *API) servedPairs() []Pair {
	cf := a.cf()
	learned := a.learnedPairs(cf)
	if len(learned) == 0 {
		return cf.configured
	}
	return append(append([]Pair(nil), cf.configured...), learned...)
}

// learnedPairs are the models proxy credentials of cf learned, with the
// credential's weight and no pair limits.
func (a *API) learnedPairs(cf *conf) []Pair {
	if a.traffic == nil {
		return nil
	}
	learned := a.traffic.Learned()
	if len(learned) == 0 {
		return nil
	}
	var out []Pair
	for _, c := range cf.creds {
		for _, m := range learned[c.Name] {
			out = append(out, Pair{Credential: c.Name, Model: m, Weight: c.Weight, RPM: -1, TPM: -1})
		}
	}
	return out
}

// Metrics are the hooks the proxy reports requests through.
func (a *API) Metrics() *Metrics { return a.metrics }

// Registry is the registry /metrics serves, with the per-pair gauges
// (auto_ai_router_model_{rpm,tpm}_current, airouter_pairs_omitted) built
// beside it at each scrape (scrapeGatherer).
func (a *API) Registry() *prometheus.Registry { return a.registry }

// current is the snapshot to answer from; never nil.
func (a *API) current() *projections.Snapshot {
	if s := a.snapshot(); s != nil {
		return s
	}
	return a.empty
}

// randomID is 96 random bits: unique enough for an admin change, and short
// enough (24 hex digits) that redaction does not take it for a token.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "admin/" + hex.EncodeToString(b[:])
}
