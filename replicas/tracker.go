// Package replicas keeps track of the routers sharing one log: each one's
// heartbeat (Beater) and, from the heartbeats folded, which replicas were
// heard from lately and whether another live process uses this router's
// replica id (Tracker). It reaches the log only through the Beater's
// Publish function and the events handed to Tracker.Observe.
package replicas

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/airouter/airouter/domain"
)

const (
	// HeartbeatEvery is how often a replica says it is alive.
	HeartbeatEvery = 30 * time.Second
	// SeenFor is how long after its last heartbeat a replica is listed.
	SeenFor = 5 * time.Minute
	// ConflictFor is how long a heartbeat of another process with this
	// router's replica id keeps the conflict reported: two heartbeat
	// intervals, so a conflict lasts while both processes live.
	ConflictFor = 2 * HeartbeatEvery
)

// NewInstance returns a random name for this process, beside its replica
// id in heartbeats.
func NewInstance() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Seen is a replica heard from within SeenFor.
type Seen struct {
	Replica string `json:"replica"`
	// LastHeard is the time of its latest heartbeat.
	LastHeard time.Time `json:"last_heard"`
	// PolicyFingerprint is the fingerprint of the policy in its file, as
	// its latest heartbeat says ("" when it said none).
	PolicyFingerprint string `json:"policy_fingerprint"`
	// Self marks this router.
	Self bool `json:"self,omitempty"`
}

// Conflict is another live process using this router's replica id.
type Conflict struct {
	Replica string `json:"replica"`
	// Instance is the other process's instance; At its latest heartbeat.
	Instance string    `json:"instance"`
	At       time.Time `json:"at"`
}

// Tracker folds heartbeats into the replicas seen. Observe runs on the
// projection writer; View is safe from any goroutine.
type Tracker struct {
	self, instance string
	logger         hclog.Logger

	mu       sync.Mutex
	seen     map[string]Seen
	conflict Conflict
}

// NewTracker tracks replicas for the router named self, running as
// instance.
func NewTracker(self, instance string, logger hclog.Logger) *Tracker {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Tracker{self: self, instance: instance, logger: logger, seen: map[string]Seen{}}
}

// Observe takes an event folded from the log; live is true for events
// stored after this router started. A live heartbeat with this router's id
// and another instance is a conflict, logged at ERROR when it begins.
// Heartbeats stored before the start are this id's earlier processes, not
// a conflict.
func (t *Tracker) Observe(ev domain.Event, live bool) {
	h := ev.Heartbeat
	if ev.Kind != domain.KindReplicaHeartbeat || h == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.seen[h.Replica]; !ok || !ev.At.Before(s.LastHeard) {
		t.seen[h.Replica] = Seen{Replica: h.Replica, LastHeard: ev.At, PolicyFingerprint: h.PolicyFingerprint,
			Self: h.Replica == t.self}
	}
	if !live || h.Replica != t.self || h.Instance == t.instance {
		return
	}
	if t.conflict.At.IsZero() || ev.At.Sub(t.conflict.At) > ConflictFor || t.conflict.Instance != h.Instance {
		t.logger.Error("another live router uses this replica id; set events.replica_id apart on each replica",
			"replica_id", t.self, "instance", t.instance, "other_instance", h.Instance)
	}
	t.conflict = Conflict{Replica: h.Replica, Instance: h.Instance, At: ev.At}
}

// Alone reports whether no replica but this router was heard from within
// SeenFor before now.
func (t *Tracker) Alone(now time.Time) bool {
	seen, _ := t.View(now)
	return !slices.ContainsFunc(seen, func(s Seen) bool { return !s.Self })
}

// View returns the replicas heard from within SeenFor before now, by id,
// and the conflict on this router's id, if one was seen within
// ConflictFor.
func (t *Tracker) View(now time.Time) ([]Seen, *Conflict) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Seen, 0, len(t.seen))
	for id, s := range t.seen {
		if now.Sub(s.LastHeard) > SeenFor {
			delete(t.seen, id)
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Seen) int { return strings.Compare(a.Replica, b.Replica) })
	if t.conflict.At.IsZero() || now.Sub(t.conflict.At) > ConflictFor {
		return out, nil
	}
	c := t.conflict
	return out, &c
}
