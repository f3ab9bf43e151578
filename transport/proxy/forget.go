package proxy

import "github.com/airouter/airouter/domain"

// Forget lets go of what the proxy keeps for a pair of a model only
// clients name, once the log's state has dropped the pair's record (the
// fold's report of an event lists it, projections.Change.Dropped): the
// pair's rate windows and its model's pool made on demand. Names clients
// stopped sending then free their room under maxLazyPairs and
// maxLazyPools instead of holding it for the process's life; the next
// request for the name makes both again. The pairs of models the table
// routes keep their windows. Safe for concurrent use with requests.
func (p *Proxy) Forget(k domain.Key) {
	t := p.table.Load()
	if _, routed := t.pools[k.Model]; routed {
		return
	}
	if _, ok := t.lazy.LoadAndDelete(k.Model); ok {
		t.lazyCount.Add(-1)
	}
	if v, ok := p.pairs.Load(k); ok && p.pairs.CompareAndDelete(k, v) && v.(*usage).lazy {
		p.lazyPairs.Add(-1)
	}
}
