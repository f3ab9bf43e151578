package proxy

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
)

// Defaults applied by New.
const (
	defaultMaxBodyBytes   = 100 << 20
	defaultMaxHops        = 20
	defaultTimeBudget     = 45 * time.Second
	defaultIdleConn       = 120 * time.Second
	defaultRefresh        = 30 * time.Second
	defaultFetchTimeout   = 15 * time.Second
	defaultMaxIdle        = 1024
	defaultMaxIdlePerHost = 256
)

// Proxy is the OpenAI-compatible front door. It is safe for concurrent use.
type Proxy struct {
	// credUse holds each credential's rate windows by name (credUsage);
	// the credentials themselves are in the table's conf (reload.go).
	credUse sync.Map // string -> *usage
	maxBody int64
	maxResp int64
	// budget bounds the body bytes held across requests.
	budget  *bodyBudget
	timeout time.Duration
	// writeTimeout bounds each write to the client (deadline.go).
	writeTimeout time.Duration
	loadGate     func() Gate
	settings     func() Settings
	record       func(domain.Outcome)
	metrics      Metrics
	tracer       Tracer
	rejected     rejections
	unusable     warnLimiter // rate-limits the WARN for requests nothing could serve
	probes       *probes
	log          hclog.Logger
	clock        clockwork.Clock
	created      int64

	transport *http.Transport
	bufs      sync.Pool // *bytes.Buffer for upstream bodies
	chunks    sync.Pool // *[]byte for stream relays
	reqPrefix string
	reqSeq    atomic.Uint64

	table   atomic.Pointer[table]
	mu      sync.Mutex // serialises table rebuilds and learned-model updates
	learned map[string][]string
	pairs   sync.Map // domain.Key -> *usage, kept across rebuilds
	// lazyPairs counts the pairs kept for models only clients name;
	// unkeptPools and unkeptPairs what the bounds turned away (Unkept).
	lazyPairs   atomic.Int64
	unkeptPools atomic.Uint64
	unkeptPairs atomic.Uint64

	refresh      time.Duration
	fetchTimeout time.Duration
	// runMu guards runCtx and stop: Start begins the model-learning
	// loop, and a reload that adds the first proxy credential starts it.
	runMu  sync.Mutex
	runCtx context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// New validates the dependencies and builds the candidate tables and the
// pooled transport.
func New(d Deps) (*Proxy, error) {
	if err := validate(d); err != nil {
		return nil, err
	}
	p := &Proxy{
		maxBody:      d.MaxBodyBytes,
		maxResp:      d.MaxResponseBytes,
		timeout:      d.RequestTimeout,
		writeTimeout: d.WriteTimeout,
		loadGate:     d.Gate,
		settings:     d.Settings,
		record:       d.Record,
		metrics:      d.Metrics,
		tracer:       d.Tracer,
		log:          d.Logger,
		clock:        d.Clock,
		learned:      make(map[string][]string),
		refresh:      d.ProxyModelRefresh,
		fetchTimeout: d.ProxyFetchTimeout,
		probes:       newProbes(d.Replica),
	}
	if p.metrics == nil {
		p.metrics = noMetrics{}
	}
	p.applyDefaults()
	p.budget = newBodyBudget(d.BodyBudgetBytes, p.maxBody)
	c, err := p.newConf(d)
	if err != nil {
		return nil, err
	}
	p.transport = newTransport(d, p.timeout)
	p.created = p.clock.Now().Unix()
	p.reqPrefix = requestIDPrefix()
	p.rebuild(c)
	return p, nil
}

func (p *Proxy) applyDefaults() {
	if p.maxBody <= 0 {
		p.maxBody = defaultMaxBodyBytes
	}
	if p.maxResp <= 0 {
		p.maxResp = 10 * p.maxBody
	}
	if p.settings == nil {
		p.settings = func() Settings {
			return Settings{MaxHops: defaultMaxHops, TimeBudget: domain.Duration(defaultTimeBudget)}
		}
	}
	if p.record == nil {
		p.record = func(domain.Outcome) {}
	}
	if p.log == nil {
		p.log = hclog.NewNullLogger()
	}
	p.log = p.log.Named("proxy")
	if p.clock == nil {
		p.clock = clockwork.NewRealClock()
	}
	if p.refresh <= 0 {
		p.refresh = defaultRefresh
	}
	if p.fetchTimeout <= 0 {
		p.fetchTimeout = defaultFetchTimeout
	}
}

func newTransport(d Deps, timeout time.Duration) *http.Transport {
	dialTimeout := timeout
	if dialTimeout <= 0 {
		dialTimeout = 30 * time.Second
	}
	idle := d.IdleConnTimeout
	if idle <= 0 {
		idle = defaultIdleConn
	}
	maxIdle, perHost := d.MaxIdleConns, d.MaxIdleConnsPerHost
	if maxIdle <= 0 {
		maxIdle = defaultMaxIdle
	}
	if perHost <= 0 {
		perHost = defaultMaxIdlePerHost
	}
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        maxIdle,
		MaxIdleConnsPerHost: perHost,
		IdleConnTimeout:     idle,
		TLSHandshakeTimeout: dialTimeout,
		// The client's Accept-Encoding is not forwarded and the
		// transport asks for nothing, so bodies arrive as sent and can be
		// inspected (usage, empty completions) and relayed unchanged.
		DisableCompression:    true,
		ExpectContinueTimeout: time.Second,
	}
}

// Start learns the models of proxy credentials once, synchronously, and
// then every ProxyModelRefresh of the proxy's clock until Close or ctx
// ends. It is called once, before serving.
func (p *Proxy) Start(ctx context.Context) {
	p.runMu.Lock()
	if p.runCtx != nil {
		p.runMu.Unlock()
		return
	}
	p.runCtx = ctx
	p.runMu.Unlock()
	if !hasProxyCredentials(p.current()) {
		return
	}
	p.RefreshModels(ctx)
	p.startRefresh()
}

// startRefresh starts the loop re-learning proxy credentials' models
// every ProxyModelRefresh, once, after Start and before Close.
func (p *Proxy) startRefresh() {
	p.runMu.Lock()
	defer p.runMu.Unlock()
	if p.runCtx == nil || p.stop != nil {
		return
	}
	ctx, cancel := context.WithCancel(p.runCtx)
	p.stop = cancel
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := p.clock.NewTicker(p.refresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.Chan():
				p.RefreshModels(ctx)
			}
		}
	}()
}

// Close stops the model-learning loop and closes idle upstream
// connections.
func (p *Proxy) Close() {
	p.runMu.Lock()
	if p.stop != nil {
		p.stop()
	}
	p.runCtx = context.Background() // a later reload starts no loop
	p.stop = func() {}
	p.runMu.Unlock()
	p.wg.Wait()
	p.transport.CloseIdleConnections()
}
