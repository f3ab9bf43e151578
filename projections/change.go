package projections

import (
	"slices"
	"time"

	"github.com/airouter/airouter/domain"
)

// Change is what one event changed in the ban table, as ApplyReport found
// it while folding: every ban the event imposed or removed, in the order
// the fold made the changes. Metrics and log lines are driven by it, so
// they follow the fold's rules for imposing and lifting bans rather than a
// copy of them. The common event, an outcome that changes no ban, reports
// the zero Change (Bans nil), which costs no allocation.
type Change struct {
	Bans []BanChange `json:"bans,omitempty"`
	// Dropped are the pair records the event dropped to keep a
	// credential's records bounded (prune.go), in the order dropped: the
	// fold keeps nothing of them, so observers let go of what they keep
	// per pair.
	Dropped []PairDrop `json:"dropped,omitempty"`
}

// PairDrop is one pair record an event dropped.
type PairDrop struct {
	Key domain.Key `json:"key"`
	// Forgotten: the record held failure counts, forgotten because the
	// credential was at maxPairs; otherwise it held nothing.
	Forgotten bool `json:"forgotten,omitempty"`
}

// BanChangeKind says what an event did to one ban.
type BanChangeKind string

const (
	// BanImposed: the event's ban is now the ban on its key. A ban the
	// fold ignores (the same id again, or an automatic ban meeting an
	// active manual one) is not reported.
	BanImposed BanChangeKind = "imposed"
	// BanReplaced: a ban still active at the event's time was superseded
	// by the ban imposed right after it in the same Change.
	BanReplaced BanChangeKind = "replaced"
	// BanLifted: an admin unban removed a ban still active at the event's
	// time.
	BanLifted BanChangeKind = "lifted"
	// BanExpired: the event removed a ban that had ended: an expiry event
	// named it, or an outcome on its pair, a new ban on its key or an admin
	// unban found it past its until.
	BanExpired BanChangeKind = "expired"
)

// BanChange is one ban an event imposed or removed.
type BanChange struct {
	Kind BanChangeKind `json:"kind"`
	// ID is the id the ban is stored under (empty for a ban whose producer
	// gave none and that has no log position).
	ID string `json:"id"`
	// Ban is the ban as the fold stores it: the new one for BanImposed,
	// the removed one otherwise. Model is "*" for a credential's wildcard
	// ban; times are UTC.
	Ban domain.Ban `json:"ban"`
	// By is how the unban event that removed the ban lifts (admin or
	// expiry); empty when an outcome or a new ban removed it, and for
	// BanImposed.
	By domain.LiftedBy `json:"by,omitempty"`
}

// Key is the key the ban was stored under.
func (c BanChange) Key() domain.Key { return c.Ban.Key() }

// add records a ban change; a nil Change (the fold without a report)
// records nothing.
func (c *Change) add(kind BanChangeKind, b *banRec, by domain.LiftedBy) {
	if c == nil {
		return
	}
	ban := b.ban
	if ban.Until != nil {
		u := *ban.Until // the record is shared with snapshots: hand out a copy
		ban.Until = &u
	}
	c.Bans = append(c.Bans, BanChange{Kind: kind, ID: b.id, Ban: ban, By: by})
}

// removed records the removal of ban b by an event at t: an ended ban
// expired, an active one is removed as kind says.
func (c *Change) removed(kind BanChangeKind, b *banRec, t time.Time, by domain.LiftedBy) {
	if !b.activeAt(nanos(t)) {
		kind = BanExpired
	}
	c.add(kind, b, by)
}

// sortFrom orders the changes from index i on by key (domain.Key.Compare:
// all of one credential here, so by model), so that an unban lifting
// several bans of a credential reports them in a stable order.
func (c *Change) sortFrom(i int) {
	if c == nil || len(c.Bans)-i < 2 {
		return
	}
	slices.SortStableFunc(c.Bans[i:], func(x, y BanChange) int { return x.Key().Compare(y.Key()) })
}

// mark is where the changes of one fold step start.
func (c *Change) mark() int {
	if c == nil {
		return 0
	}
	return len(c.Bans)
}
