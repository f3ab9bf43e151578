package proxy

import (
	"math"
	"time"

	"github.com/airouter/airouter/domain"
)

// CountPeer counts, in the rate windows of the credential and of the pair,
// one request another replica made at its time at, with the tokens it was
// charged: the windows count every replica's requests, this one's at
// selection and the others' as their outcomes come back from the log. A
// time ahead of the proxy's clock counts now; one older than the window
// counts nothing. The pairs it has no windows for (models only clients
// name, not seen here) are not created. It runs on the projection writer,
// beside the lock-free selection, and takes no lock.
func (p *Proxy) CountPeer(credential, model string, at time.Time, tokens int64) {
	now := p.clock.Now().Unix()
	sec := min(at.Unix(), now)
	if sec <= now-windowSeconds {
		return
	}
	n := uint32(min(max(tokens, 0), math.MaxUint32))
	if v, ok := p.credUse.Load(credential); ok {
		v.(*usage).count(sec, n)
	}
	if v, ok := p.pairs.Load(domain.Key{Credential: credential, Model: model}); ok {
		v.(*usage).count(sec, n)
	}
}

// count adds one request and n tokens at second sec.
func (u *usage) count(sec int64, n uint32) {
	u.reqs.add(sec, 1)
	if n > 0 {
		u.toks.add(sec, n)
	}
}

// ReplicaID is the replica id this proxy stamps on its outcomes (and
// names its recovery probe claims by): Deps.Replica.
func (p *Proxy) ReplicaID() string { return p.probes.replica }
