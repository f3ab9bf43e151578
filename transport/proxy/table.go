package proxy

import (
	"encoding/json"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/airouter/airouter/domain"
)

// endpoint is one proxied surface, as a bit so a credential can say which
// surfaces it serves.
type endpoint uint8

const (
	epChat endpoint = 1 << iota
	epCompletions
	epEmbeddings
	epResponses
	epMessages
)

// endpointsFor says which surfaces a credential type serves: OpenAI-style
// upstreams speak the OpenAI surfaces, Anthropic speaks Messages and its
// OpenAI-compatible chat endpoint, and another router speaks everything.
func endpointsFor(typ domain.CredentialType) endpoint {
	switch typ {
	case domain.CredentialOpenAI:
		return epChat | epCompletions | epEmbeddings | epResponses
	case domain.CredentialAnthropic:
		return epMessages | epChat
	}
	return epChat | epCompletions | epEmbeddings | epResponses | epMessages
}

// credState is a credential as the hot path uses it.
type credState struct {
	idx      int
	name     string
	typ      domain.CredentialType
	proxy    bool
	fallback bool
	weight   int64
	base     url.URL
	auth     string   // the Authorization or x-api-key value; never logged
	authHdr  []string // auth as a header value, shared read-only by every upstream request
	key      string
	eps      endpoint
	limits   limits
}

func newCredState(i int, c Credential, use *usage) (*credState, error) {
	u, err := parseBaseURL(c.BaseURL)
	if err != nil {
		return nil, err
	}
	cs := &credState{
		idx: i, name: c.Name, typ: c.Type, proxy: c.Type == domain.CredentialProxy,
		fallback: c.IsFallback, weight: max(int64(c.Weight), 1), base: *u,
		key: c.APIKey, eps: endpointsFor(c.Type),
	}
	if c.APIKey != "" {
		cs.auth = "Bearer " + c.APIKey
		if c.Type == domain.CredentialAnthropic {
			cs.auth = c.APIKey
		}
		cs.authHdr = []string{cs.auth}
	}
	cs.limits = newLimits(c.RPM, c.TPM, use)
	return cs, nil
}

// candidate is one credential serving one model.
type candidate struct {
	cred  *credState
	model string // public id
	// send is the JSON-encoded model name sent upstream; nil means the
	// client's (alias-resolved) public id, as proxy credentials get.
	send   []byte
	weight int64
	pair   limits
	// label is "credential/model", safe for a header.
	label string
	// okTrail is the X-Fallback-Trail value of a first hop that
	// succeeded, built once.
	okTrail []string
	// current is the smooth weighted round-robin counter.
	current atomic.Int64
	// lastFail is when an attempt on the candidate last failed here (Unix
	// nanoseconds, 0 never): panic routing tries the least recently
	// failed first.
	lastFail atomic.Int64
	// probeSeen is the last recovery probe claim found spent for the
	// candidate, so picks meeting it again skip the probes' lock.
	probeSeen atomic.Pointer[domain.ProbeClaim]
}

// pool is every candidate for one public model, primaries first in config
// order, then fallbacks.
type pool struct {
	model    string
	cands    []candidate
	primary  int // cands[:primary] are primaries
	eps      endpoint
	hasLimit bool
	// probes tracks the recovery probes this process sent (recovery.go);
	// nil sends none.
	probes *probes
	// groups holds the samplers of large groups and the probe claim
	// counts (sample.go, probeclaims.go).
	groups groups
}

// table is an immutable routing table; a rebuild swaps in a new one.
type table struct {
	// conf is what the table was built from: a request reads its keys,
	// aliases and secrets here, from the table it started with.
	conf  *conf
	pools map[string]*pool
	// anyModel are the credentials that serve any model: every credential
	// when no routes are configured, else proxy credentials whose models
	// are not learned yet.
	anyModel []*credState
	// lazy holds pools made on demand for models only anyModel serves.
	lazy      sync.Map // string -> *pool
	lazyCount atomic.Int32
	models    []string
}

// maxLazyPools bounds the pools kept for models named only by clients
// (per table), maxLazyPairs the rate windows kept for their pairs (across
// tables: a table is rebuilt whenever proxy credentials learn models).
const (
	maxLazyPools = 4096
	maxLazyPairs = 16384
)

// rebuild builds a new table from c (nil: the conf in force) and the
// learned models and swaps it in. Rate-limit windows survive, round-robin
// counters restart.
func (p *Proxy) rebuild(c *conf) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rebuildLocked(c)
}

// rebuildLocked is rebuild with p.mu held.
func (p *Proxy) rebuildLocked(c *conf) {
	if c == nil {
		c = p.current()
	}
	t := &table{conf: c, pools: make(map[string]*pool)}
	order := []string{}
	members := make(map[string][]candidateSpec)
	add := func(model string, s candidateSpec) {
		for _, m := range members[model] {
			if m.cred == s.cred {
				return
			}
		}
		if _, ok := members[model]; !ok {
			order = append(order, model)
		}
		members[model] = append(members[model], s)
	}
	for _, r := range c.routes {
		add(r.Model, candidateSpec{cred: c.byName[r.Credential], upstream: r.UpstreamModel,
			weight: r.Weight, rpm: r.RPM, tpm: r.TPM})
	}
	for _, cr := range c.creds {
		if !cr.proxy {
			continue
		}
		models, ok := p.learned[cr.name]
		if !ok {
			continue
		}
		for _, m := range models {
			add(m, candidateSpec{cred: cr})
		}
	}
	for _, cr := range c.creds {
		_, learned := p.learned[cr.name]
		if len(c.routes) == 0 || (cr.proxy && !learned) {
			t.anyModel = append(t.anyModel, cr)
		}
	}
	for _, model := range order {
		specs := members[model]
		for _, c := range t.anyModel {
			specs = append(specs, candidateSpec{cred: c})
		}
		t.pools[model] = p.newPool(model, specs, false)
	}
	t.models = slices.Sorted(func(yield func(string) bool) {
		for m := range t.pools {
			if !yield(m) {
				return
			}
		}
	})
	p.table.Store(t)
}

// candidateSpec is a candidate before it is built.
type candidateSpec struct {
	cred     *credState
	upstream string
	weight   int
	rpm, tpm int
}

func (p *Proxy) newPool(model string, specs []candidateSpec, lazy bool) *pool {
	specs = dedupe(specs)
	pl := &pool{model: model, cands: make([]candidate, len(specs)), probes: p.probes}
	// Primaries first, then fallbacks, each in config order.
	slices.SortStableFunc(specs, func(a, b candidateSpec) int {
		switch {
		case a.cred.fallback == b.cred.fallback:
			return 0
		case a.cred.fallback:
			return 1
		}
		return -1
	})
	for i, s := range specs {
		c := &pl.cands[i]
		c.cred = s.cred
		c.model = model
		c.weight = s.cred.weight
		if s.weight > 0 {
			c.weight = int64(s.weight)
		}
		if !s.cred.proxy {
			up := s.upstream
			if up == "" {
				up = model
			}
			c.send, _ = json.Marshal(up)
		}
		c.pair = newLimits(s.rpm, s.tpm, p.pairUsage(domain.Key{Credential: s.cred.name, Model: model}, lazy))
		c.label = safeHeaderValue(s.cred.name + "/" + model)
		c.okTrail = []string{c.label + "=" + string(domain.ClassOK)}
		if !s.cred.fallback {
			pl.primary++
		}
		pl.eps |= s.cred.eps
		pl.hasLimit = pl.hasLimit || c.pair.rpm > 0 || c.pair.tpm > 0 ||
			s.cred.limits.rpm > 0 || s.cred.limits.tpm > 0
	}
	pl.buildGroups()
	return pl
}

func dedupe(specs []candidateSpec) []candidateSpec {
	out := specs[:0:0]
	for _, s := range specs {
		if !slices.ContainsFunc(out, func(o candidateSpec) bool { return o.cred == s.cred }) {
			out = append(out, s)
		}
	}
	return out
}

// pairUsage returns the windows of a pair, created once and kept across
// rebuilds. The pairs of models only clients name (lazy) are kept while
// there are fewer than maxLazyPairs of them, until the log's state drops
// the pair (Forget); past that, a made-up model's
// windows live only as long as its pool, so clients inventing names cannot
// grow memory without bound. Such pairs have no limits of their own; the
// windows only feed Usage.
func (p *Proxy) pairUsage(k domain.Key, lazy bool) *usage {
	if v, ok := p.pairs.Load(k); ok {
		return v.(*usage)
	}
	if lazy && p.lazyPairs.Load() >= maxLazyPairs {
		p.unkeptPairs.Add(1)
		return &usage{}
	}
	v, loaded := p.pairs.LoadOrStore(k, &usage{lazy: lazy})
	if lazy && !loaded {
		p.lazyPairs.Add(1)
	}
	return v.(*usage)
}

// poolFor returns the candidates for a public model id, or nil when no
// credential serves it.
func (p *Proxy) poolFor(model string) *pool { return p.poolIn(p.table.Load(), model) }

// poolIn is poolFor in table t.
func (p *Proxy) poolIn(t *table, model string) *pool {
	if pl, ok := t.pools[model]; ok {
		return pl
	}
	if len(t.anyModel) == 0 {
		return nil
	}
	if v, ok := t.lazy.Load(model); ok {
		return v.(*pool)
	}
	specs := make([]candidateSpec, 0, len(t.anyModel))
	for _, c := range t.anyModel {
		specs = append(specs, candidateSpec{cred: c})
	}
	// No lock: newPool reads only the immutable specs and the pairs map.
	pl := p.newPool(model, specs, true)
	if t.lazyCount.Load() >= maxLazyPools {
		p.unkeptPools.Add(1)
		return pl // served, but not kept
	}
	v, loaded := t.lazy.LoadOrStore(model, pl)
	if !loaded {
		t.lazyCount.Add(1)
	}
	return v.(*pool)
}

// Models returns the public model ids served: configured models and those
// learned from proxy credentials, sorted. Aliases are not listed.
func (p *Proxy) Models() []string {
	return slices.Clone(p.table.Load().models)
}

// Usage returns the requests and tokens counted in the current 60 s window
// for a credential (model "") or a credential+model pair.
func (p *Proxy) Usage(credential, model string) (rpm, tpm int) {
	sec := p.clock.Now().Unix()
	var u *usage
	if model == "" {
		c, ok := p.current().byName[credential]
		if !ok {
			return 0, 0
		}
		u = c.limits.use
	} else {
		v, ok := p.pairs.Load(domain.Key{Credential: credential, Model: model})
		if !ok {
			return 0, 0
		}
		u = v.(*usage)
	}
	return int(u.reqs.sum(sec)), int(u.toks.sum(sec))
}

// Unkept counts what the bounds on client-chosen model names turned away
// since start: "pools", requests for a name past maxLazyPools, whose pool
// was built for them alone; "pairs", rate windows made past maxLazyPairs
// and kept by nobody.
func (p *Proxy) Unkept() map[string]uint64 {
	return map[string]uint64{"pools": p.unkeptPools.Load(), "pairs": p.unkeptPairs.Load()}
}

// Learned returns, per proxy credential, the models learned from its
// upstream so far (sorted copies); credentials not learned yet are absent.
func (p *Proxy) Learned() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string][]string, len(p.learned))
	for name, models := range p.learned {
		out[name] = slices.Sorted(slices.Values(models))
	}
	return out
}
