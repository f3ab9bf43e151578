package proxy

import (
	"cmp"
	"net/http"
	"slices"
	"sync"

	"github.com/airouter/airouter/domain"
)

// Recovery on the request path: recovery probes (one request through to a
// pair under an automatic ban, when this process's claim of the probe is
// in the snapshot) and panic routing (trying candidates held back
// automatically when none is usable). A success on such a pair is an
// outcome like any other; the decision engine lifts the ban by recovery.

// maxProbeMarks bounds the claims remembered as sent; past it the marks
// start afresh (a claim is replaced within probe_max anyway).
const maxProbeMarks = 4096

// probeMark names one claim: a ban's probe interval.
type probeMark struct {
	banID    string
	interval int
}

// probes remembers which of this process's claims have had their one
// request, so each claim lets exactly one through. Only requests meeting
// a banned pair with an open claim touch it.
type probes struct {
	replica string
	mu      sync.Mutex
	sent    map[probeMark]struct{}
}

func newProbes(replica string) *probes {
	return &probes{replica: replica, sent: map[probeMark]struct{}{}}
}

// open reports whether the claim is this process's and unsent.
func (pr *probes) open(c *domain.ProbeClaim) bool {
	if pr == nil || pr.replica == "" || c.Replica != pr.replica {
		return false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	_, done := pr.sent[probeMark{c.BanID, c.Interval}]
	return !done
}

// take marks the claim sent, reporting false when another request took
// it first.
func (pr *probes) take(c *domain.ProbeClaim) bool {
	if pr == nil || pr.replica == "" || c.Replica != pr.replica {
		return false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	m := probeMark{c.BanID, c.Interval}
	if _, done := pr.sent[m]; done {
		return false
	}
	if len(pr.sent) >= maxProbeMarks {
		clear(pr.sent)
	}
	pr.sent[m] = struct{}{}
	return true
}

// hopAllowed reports whether the request may make another attempt: under
// the hop limit and within the time budget (marking the budget out).
func (p *Proxy) hopAllowed(rq *request) bool {
	if hops := rq.settings.MaxHops; hops > 0 && len(rq.hops) >= hops {
		return false
	}
	if rq.remainingAt(p.clock.Now()) < 0 {
		rq.budgetOut = true
		return false
	}
	return true
}

// probed counts a recovery probe by how its attempt (the request's last
// hop) ended.
func (p *Proxy) probed(rq *request) {
	ok := len(rq.hops) > 0 && rq.hops[len(rq.hops)-1].class == domain.ClassOK
	p.metrics.Probe(rq.model, ok)
}

// panicCandidates are the candidates a panic-routed request tries: those
// not tried yet that serve the surface, are held back only automatically
// (an automatic ban, a cooldown or a bench; never a manual ban) and are
// under their rate limits; least recently failed here first, then in
// config order.
func (pl *pool) panicCandidates(g Gate, rq *request, sec int64, p *Proxy) []int {
	if g == nil {
		return nil
	}
	now := p.clock.Now()
	var out []int
	for i := range pl.cands {
		c := &pl.cands[i]
		if rq.skip.has(i) || c.cred.eps&rq.ep == 0 || c.full(sec) {
			continue
		}
		if b, blocked := g.Blocked(c.cred.name, c.model, now); blocked && !b.Manual {
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(a, b int) int {
		return cmp.Compare(pl.cands[a].lastFail.Load(), pl.cands[b].lastFail.Load())
	})
	return out
}

// panicServe serves a request none of whose candidates is usable by
// trying those held back automatically, within the usual hop and time
// limits. It reports whether the client has its answer; false leaves the
// request to be answered as exhausted.
func (p *Proxy) panicServe(w http.ResponseWriter, r *http.Request, rq *request) bool {
	now := p.clock.Now()
	cands := rq.pool.panicCandidates(p.gate(), rq, now.Unix(), p)
	if len(cands) == 0 {
		return false
	}
	p.metrics.Panic(rq.model)
	p.log.Debug("panic routing: every candidate is held back automatically; trying them anyway",
		"request_id", rq.id, "model", rq.model, "candidates", len(cands))
	for _, i := range cands {
		if r.Context().Err() != nil {
			return true // nobody is left to answer
		}
		if !p.hopAllowed(rq) {
			return false
		}
		c := &rq.pool.cands[i]
		if !c.reserve(p.clock.Now().Unix()) {
			continue
		}
		rq.skip.set(i)
		if p.attempt(w, r, rq, c) {
			p.metrics.Request(len(rq.hops))
			return true
		}
		if rq.budgetOut {
			return false
		}
	}
	return false
}
