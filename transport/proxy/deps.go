package proxy

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// Credential is one upstream account as config describes it.
type Credential struct {
	Name    string
	Type    domain.CredentialType
	BaseURL string // checked by domain.CleanBaseURL; the client's path is appended
	// APIKey is sent upstream (Authorization, or x-api-key to Anthropic);
	// empty sends none, and a proxy credential then passes a client key on.
	APIKey string
	// RPM and TPM limit the credential over a sliding 60 s window; 0 or
	// -1 means unlimited.
	RPM, TPM int
	// Weight is the selection weight; 0 means 1.
	Weight int
	// IsFallback puts the credential in the fallback pool, tried only when
	// no primary candidate is left.
	IsFallback bool
}

// Route says that a credential serves a public model id.
type Route struct {
	Model         string // the public id clients send
	Credential    string
	UpstreamModel string // the name sent upstream; empty means Model
	// Weight overrides the credential's weight for this model when > 0.
	Weight int
	// RPM and TPM limit the credential+model pair; 0 or -1 is unlimited.
	RPM, TPM int
}

// Settings are the failover knobs an operator may change at runtime.
// MaxHops <= 0 means no hop limit (every candidate is tried at most once);
// TimeBudget 0 means no budget.
type Settings = domain.FallbackSettings

// Gate answers whether a pair may be routed to now; *projections.Snapshot
// satisfies it. A nil Gate blocks nothing.
type Gate interface {
	Blocked(credential, model string, now time.Time) (domain.Block, bool)
}

// Deps is everything the proxy needs, given once at construction.
type Deps struct {
	Credentials []Credential
	// Routes map public model ids to credentials. With no routes at all,
	// every credential serves every model.
	Routes []Route
	// Aliases maps a name a client may send to the public model id.
	Aliases map[string]string
	// MasterKey and ClientKeys are the keys clients may call with; the
	// master key is never forwarded upstream.
	MasterKey  string
	ClientKeys []string

	MaxBodyBytes int64 // request bodies above this get 413; 0 means 100 MiB
	// BodyBudgetBytes bounds the request body bytes held at once across
	// requests (bodyread.go); 0 means 4 × MaxBodyBytes, and less than
	// MaxBodyBytes is an error. A request that finds no room waits for it
	// within RequestTimeout, then gets 503 with Retry-After.
	BodyBudgetBytes int64
	// MaxResponseBytes bounds a buffered upstream body; 0 means
	// 10 × MaxBodyBytes.
	MaxResponseBytes int64
	// RequestTimeout bounds the read of the client's body (408; a wait
	// for room in the body budget ends in 503), each attempt up to its
	// response headers, and the body of a non-streamed response. 0 means
	// none.
	RequestTimeout time.Duration
	// WriteTimeout is the HTTP server's write timeout. The server arms it
	// for the whole request, which would cut a long stream or a long
	// failover; the proxy instead clears it and applies it to each write
	// to the client (deadline.go). 0 means none.
	WriteTimeout time.Duration
	// IdleConnTimeout, MaxIdleConns and MaxIdleConnsPerHost size the
	// pooled upstream transport (http.Transport's fields of those names).
	// The wiring leaves them at their defaults: config accepts
	// server.idle_conn_timeout, max_idle_conns and max_idle_conns_per_host
	// but does not pass them on.
	IdleConnTimeout     time.Duration // 0 means 120 s
	MaxIdleConns        int           // 0 means 1024
	MaxIdleConnsPerHost int           // 0 means 256

	// Gate returns the current routing view (the latest projection
	// snapshot). Nil blocks nothing. It must not return a nil pointer
	// wrapped in a non-nil Gate.
	Gate func() Gate
	// Settings returns the current failover settings. Nil means 20 hops
	// and a 45 s budget.
	Settings func() Settings
	// Record receives one outcome per upstream attempt. It must not block.
	Record func(domain.Outcome)
	// Watched reports whether Fail2Ban counts status for the credential;
	// such a client error fails over instead of passing through.
	Watched func(credential string, status int) bool

	// Panic turns on panic routing (fallback.panic): when every
	// candidate of a model is held back by an automatic ban, a cooldown
	// or a bench, a request tries them anyway, least recently failed
	// first, instead of answering 429 (recovery.go).
	Panic bool
	// Replica is this router's replica id (events.replica_id): its
	// outcomes carry it, so other replicas count them in their rate
	// windows, and a recovery probe claim naming it lets one request
	// through to its banned pair. Empty sends no probes.
	Replica string

	// Metrics counts attempts, requests and exhaustions; nil counts
	// nothing.
	Metrics Metrics
	// Tracer records a span per request and per attempt (tracer.go);
	// nil records none, at no cost.
	Tracer Tracer

	Logger hclog.Logger // nil discards
	// Clock is where the proxy reads the time (selection, rate windows,
	// latencies, the time budget) and gets its timers (request_timeout,
	// the time budget) and the model-relearning ticker; nil means the real
	// clock. The write deadlines on client connections (WriteTimeout), and
	// the read deadline that ends a body read past request_timeout, are
	// set on the network, so they always follow the real clock.
	Clock clockwork.Clock

	// ProxyModelRefresh is how often proxy credentials' models are
	// re-learned; 0 means 30 s. ProxyFetchTimeout bounds one fetch; 0
	// means 15 s.
	ProxyModelRefresh time.Duration
	ProxyFetchTimeout time.Duration
}

// validate reports every problem with the dependencies at once. Messages
// name credentials, never their keys.
func validate(d Deps) error {
	var errs []error
	if d.MasterKey == "" {
		errs = append(errs, errors.New("proxy: master key is required"))
	}
	if len(d.Credentials) == 0 {
		errs = append(errs, errors.New("proxy: no credentials configured"))
	}
	seen := make(map[string]bool, len(d.Credentials))
	for i, c := range d.Credentials {
		if err := domain.CheckCredentialName(c.Name, seen); err != nil {
			errs = append(errs, fmt.Errorf("proxy: credential %d: name %q %w", i, c.Name, err))
		}
		if !c.Type.Valid() {
			errs = append(errs, fmt.Errorf("proxy: credential %q: type %q is not openai, anthropic or proxy", c.Name, c.Type))
		}
		if _, err := parseBaseURL(c.BaseURL); err != nil {
			errs = append(errs, fmt.Errorf("proxy: credential %q: %w", c.Name, err))
		}
		if c.Weight < 0 {
			errs = append(errs, fmt.Errorf("proxy: credential %q: weight %d is negative", c.Name, c.Weight))
		}
	}
	type pair struct{ model, cred string }
	routed := make(map[pair]bool, len(d.Routes))
	for i, r := range d.Routes {
		switch {
		case r.Model == "":
			errs = append(errs, fmt.Errorf("proxy: route %d: model is required", i))
		case !seen[r.Credential]:
			errs = append(errs, fmt.Errorf("proxy: route %d (%s): unknown credential %q", i, r.Model, r.Credential))
		case routed[pair{r.Model, r.Credential}]:
			errs = append(errs, fmt.Errorf("proxy: route %d: credential %q serves model %q twice", i, r.Credential, r.Model))
		}
		routed[pair{r.Model, r.Credential}] = true
		if r.Weight < 0 {
			errs = append(errs, fmt.Errorf("proxy: route %d (%s): weight %d is negative", i, r.Model, r.Weight))
		}
	}
	if d.MaxBodyBytes < 0 || d.MaxResponseBytes < 0 || d.BodyBudgetBytes < 0 || d.RequestTimeout < 0 || d.WriteTimeout < 0 {
		errs = append(errs, errors.New("proxy: body limits and timeouts must not be negative"))
	}
	if maxBody := cmp.Or(d.MaxBodyBytes, defaultMaxBodyBytes); d.BodyBudgetBytes > 0 && d.BodyBudgetBytes < maxBody {
		errs = append(errs, fmt.Errorf("proxy: body budget %d bytes is below the body limit %d bytes", d.BodyBudgetBytes, maxBody))
	}
	return errors.Join(errs...)
}

// parseBaseURL checks a base URL by the rule config applies
// (domain.CleanBaseURL) and parses it. User info is dropped: the
// credential's key is the only authentication sent upstream.
func parseBaseURL(raw string) (*url.URL, error) {
	clean, err := domain.CleanBaseURL(raw)
	if err == nil {
		var u *url.URL
		if u, err = url.Parse(clean); err == nil {
			// The client's path is appended to Path; an escaped form of
			// the base path would no longer match it.
			u.RawPath = ""
			u.User = nil
			return u, nil
		}
	}
	return nil, fmt.Errorf("base_url %q %v", raw, err)
}
