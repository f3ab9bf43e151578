package adminapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
	"github.com/airouter/airouter/redact"
)

// GET /api/timeline?since=T&until=T: what held each pair out of rotation in
// a window, for the dashboard's strips. The state at since comes from the
// log's fold (History.StateAt), then every event up to until is folded
// with projections.ApplyReport: a ban's bar runs from its start to the
// event that lifted, replaced or expired it in the fold (an expiry ends it
// at its until), or to its until; cooldowns and benches run to their ends.
// Kinds the timeline does not draw as bars are marks, with the credential,
// model and reason their payload names.

// Timeline is the /api/timeline document.
type Timeline struct {
	// Since and Until are the window answered: since is moved up to the
	// earliest moment the log holds when it asked for more.
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Intervals and Marks are in the order the fold met them.
	Intervals []Interval `json:"intervals"`
	Marks     []Mark     `json:"marks"`
	// Truncated is set when the window held more than maxTimelineEntries
	// intervals and marks: those after them are left out.
	Truncated bool `json:"truncated,omitempty"`
	// Unreadable counts the events in the window this version cannot
	// read.
	Unreadable int `json:"unreadable,omitempty"`
}

// Interval is a span a pair (Model "*": every model of the credential), or
// a model on every credential (Credential "*", a bench), was held.
type Interval struct {
	// Kind is "ban", "cooldown" or "bench".
	Kind       string        `json:"kind"`
	Credential string        `json:"credential"`
	Model      string        `json:"model"`
	Origin     domain.Origin `json:"origin,omitempty"`
	Reason     string        `json:"reason,omitempty"`
	From       time.Time     `json:"from"`
	// Until is the end; absent for a permanent ban still in force at the
	// window's end.
	Until *time.Time `json:"until,omitempty"`
	// End says how a ban ended inside the window: "lifted", "replaced"
	// or "expired"; absent while it holds at the window's end.
	End string `json:"end,omitempty"`
}

// Mark is one event drawn as a point: a kind the strips draw no bar for.
type Mark struct {
	Kind       domain.Kind `json:"kind"`
	Credential string      `json:"credential"`
	Model      string      `json:"model,omitempty"`
	At         time.Time   `json:"at"`
	Reason     string      `json:"reason,omitempty"`
}

// The timeline's bounds.
const (
	// defaultTimelineSpan is the window when since is not given.
	defaultTimelineSpan = 6 * time.Hour
	// maxTimelineEntries caps the intervals and marks of one answer.
	maxTimelineEntries = 2000
)

// errTimelineFull ends the walk once the answer is full.
var errTimelineFull = errors.New("the timeline is full")

// serveTimeline answers GET /api/timeline. Like /health it needs no key:
// it shows the bans, reasons and ends /health shows, over time.
func (a *API) serveTimeline(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return
	}
	if err := a.timeline(w, r); err != nil {
		a.fail(w, r, err)
	}
}

func (a *API) timeline(w http.ResponseWriter, r *http.Request) error {
	now := a.now().UTC()
	q := r.URL.Query()
	if err := onlyParams(q, "/api/timeline", []string{"since", "until"}, []string{"since", "until"}); err != nil {
		return err
	}
	until, err := moment(q, "until", now, now)
	if err != nil {
		return err
	}
	since, err := moment(q, "since", now, until.Add(-defaultTimelineSpan))
	if err != nil {
		return err
	}
	if !since.Before(until) {
		return badRequest("since %s is not before until %s", since.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano))
	}
	var tl *Timeline
	err = a.past(r.Context(), "the timeline from "+since.Format(time.RFC3339Nano), func(ctx context.Context) error {
		st, err := a.history.StateAt(ctx, since)
		var nh notHeld
		if errors.As(err, &nh) {
			// Answer from the earliest moment the log holds.
			if e := nh.EarliestHeld(); !e.IsZero() && e.Before(until) {
				since = e
				st, err = a.history.StateAt(ctx, since)
			} else {
				tl = &Timeline{Since: since, Until: until, Intervals: []Interval{}, Marks: []Mark{}}
				return nil
			}
		}
		if err != nil {
			return err
		}
		tl, err = a.buildTimeline(ctx, st, since, until)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, tl)
	return nil
}

// timelineBuilder folds the window's events and collects its entries.
type timelineBuilder struct {
	tl      *Timeline
	bans    map[domain.Key]int // open ban intervals by key
	benches map[string]int     // open bench intervals by model
}

// buildTimeline opens the intervals in force at since in st, then folds
// the events up to until.
func (a *API) buildTimeline(ctx context.Context, st *projections.State, since, until time.Time) (*Timeline, error) {
	b := &timelineBuilder{
		tl:   &Timeline{Since: since, Until: until, Intervals: []Interval{}, Marks: []Mark{}},
		bans: map[domain.Key]int{}, benches: map[string]int{},
	}
	snap := st.Snapshot()
	for _, ban := range snap.Bans(since) {
		b.openBan(ban.Credential, ban.Model, ban.Origin, ban.Reason, ban.Since, ban.Until)
	}
	for _, k := range snap.Pairs() {
		if pv := snap.Pair(k, since); pv.CooldownUntil != nil {
			b.add(Interval{Kind: "cooldown", Credential: k.Credential, Model: k.Model, From: since, Until: pv.CooldownUntil,
				Reason: "the upstream asked for a pause (Retry-After)"})
		}
	}
	for model, bench := range snap.Benched(since) {
		u := bench.Until
		b.benches[model] = b.add(Interval{Kind: "bench", Credential: domain.AllModels, Model: model, From: since, Until: &u, Reason: redact.String(bench.Reason)})
	}
	err := a.history.EventsAfter(ctx, st, until, func(ev domain.Event) error {
		pos := st.Pos()
		if ev.Seq > 0 && !pos.Before(ev.Pos()) {
			return nil // the state at since holds it already
		}
		var ch projections.Change
		st, ch = projections.ApplyReport(st, ev)
		b.event(ev, ch)
		if len(b.tl.Intervals)+len(b.tl.Marks) >= maxTimelineEntries {
			b.tl.Truncated = true
			return errTimelineFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errTimelineFull) {
		return nil, err
	}
	return b.tl, nil
}

// event adds what one folded event changed.
func (b *timelineBuilder) event(ev domain.Event, ch projections.Change) {
	for _, c := range ch.Bans {
		k := c.Key()
		if c.Kind == projections.BanImposed {
			b.openBan(k.Credential, k.Model, c.Ban.Origin, c.Ban.Reason, c.Ban.Since, untilOf(c.Ban))
			continue
		}
		i, ok := b.bans[k]
		if !ok {
			continue // it ended before the window
		}
		delete(b.bans, k)
		end := ev.At
		if u := b.tl.Intervals[i].Until; c.Kind == projections.BanExpired && u != nil && u.Before(end) {
			end = *u
		}
		b.tl.Intervals[i].Until, b.tl.Intervals[i].End = &end, string(c.Kind)
	}
	switch {
	case ev.Kind == "":
		b.tl.Unreadable++
	case ev.Cooldown != nil:
		c := ev.Cooldown
		u := c.Until
		reason := "the upstream answered " + strconv.Itoa(c.Status) + " with Retry-After"
		if c.Reason != "" {
			reason = strconv.Itoa(c.Status) + " " + redact.String(c.Reason)
		}
		b.add(Interval{Kind: "cooldown", Credential: c.Credential, Model: c.Model, From: ev.At, Until: &u, Reason: reason})
	case ev.CooldownLift != nil:
		b.endCooldown(*ev.CooldownLift, ev.At)
	case ev.Bench != nil:
		u := ev.Bench.Until
		b.benches[ev.Bench.Model] = b.add(Interval{Kind: "bench", Credential: domain.AllModels, Model: ev.Bench.Model,
			From: ev.At, Until: &u, Reason: redact.String(ev.Bench.Reason)})
	case ev.Unbench != nil:
		if i, ok := b.benches[ev.Unbench.Model]; ok {
			delete(b.benches, ev.Unbench.Model)
			end := ev.At
			if u := b.tl.Intervals[i].Until; u == nil || end.Before(*u) {
				b.tl.Intervals[i].Until, b.tl.Intervals[i].End = &end, "lifted"
			}
		}
	case ev.Outcome != nil, ev.Ban != nil, ev.Unban != nil, ev.Settings != nil, ev.Policy != nil:
		// Outcomes, settings and policy changes hold no pair; bans are the
		// fold's Change.
	default:
		if m, ok := markOf(ev); ok {
			b.tl.Marks = append(b.tl.Marks, m)
		}
	}
}

// endCooldown ends, at at, the open cooldown interval of every model of
// the lift's credential: a recovery probe re-validated the key.
func (b *timelineBuilder) endCooldown(l domain.CooldownLift, at time.Time) {
	for i := len(b.tl.Intervals) - 1; i >= 0; i-- {
		iv := &b.tl.Intervals[i]
		if iv.Kind == "cooldown" && iv.Credential == l.Credential && iv.Model == l.Model && iv.Until != nil && iv.Until.After(at) {
			end := at
			iv.Until, iv.End = &end, "lifted"
			return
		}
	}
}

// openBan opens a ban's interval on its key.
func (b *timelineBuilder) openBan(cred, model string, origin domain.Origin, reason string, from time.Time, until *time.Time) {
	b.bans[domain.Key{Credential: cred, Model: model}] = b.add(Interval{
		Kind: "ban", Credential: cred, Model: model, Origin: origin, Reason: redact.String(reason), From: from, Until: until})
}

// add appends an interval and returns its index.
func (b *timelineBuilder) add(iv Interval) int {
	if iv.Until != nil {
		u := *iv.Until
		iv.Until = &u
	}
	b.tl.Intervals = append(b.tl.Intervals, iv)
	return len(b.tl.Intervals) - 1
}

// untilOf is a ban's end, nil for a permanent ban.
func untilOf(ban domain.Ban) *time.Time {
	if ban.Permanent || ban.Until == nil {
		return nil
	}
	u := *ban.Until
	return &u
}

// markOf is the mark for an event of a kind the timeline draws no bar for
// (ban.withheld, ban.shadowed, and kinds added later): the credential,
// model and reason its payload names, read from its JSON so that a kind
// needs no code here to be drawn. An event naming neither a credential nor
// a model is not drawn.
func markOf(ev domain.Event) (Mark, bool) {
	raw, err := json.Marshal(ev)
	if err != nil {
		return Mark{}, false
	}
	return markFromJSON(raw)
}

// markFromJSON reads a mark from an event's JSON: the first payload object
// (any member besides the envelope's) that names a credential or a model,
// directly or in an object one level down (a payload carrying a "ban").
func markFromJSON(raw []byte) (Mark, bool) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(raw, &doc) != nil {
		return Mark{}, false
	}
	var env struct {
		Kind domain.Kind `json:"kind"`
		At   time.Time   `json:"at"`
	}
	if json.Unmarshal(raw, &env) != nil {
		return Mark{}, false
	}
	for name, member := range doc {
		switch name {
		case "v", "kind", "id", "at":
			continue
		}
		p, ok := payloadNames(member)
		if !ok {
			continue
		}
		m := Mark{Kind: env.Kind, At: env.At, Credential: p.Credential, Model: p.Model, Reason: redact.N(p.Reason, 512)}
		if m.Credential == "" {
			m.Credential = domain.AllModels
		}
		return m, true
	}
	return Mark{}, false
}

// payloadNamed is what a mark reads from a payload.
type payloadNamed struct {
	Credential string `json:"credential"`
	Model      string `json:"model"`
	Reason     string `json:"reason"`
}

// payloadNames reads the credential, model and reason of a payload
// object, or of an object it holds, the payload's own reason first.
func payloadNames(member json.RawMessage) (payloadNamed, bool) {
	var p payloadNamed
	if json.Unmarshal(member, &p) != nil {
		return p, false
	}
	if p.Credential != "" || p.Model != "" {
		return p, true
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(member, &inner) != nil {
		return p, false
	}
	for _, v := range inner {
		var q payloadNamed
		if json.Unmarshal(v, &q) == nil && (q.Credential != "" || q.Model != "") {
			if p.Reason != "" {
				q.Reason = p.Reason
			}
			return q, true
		}
	}
	return p, false
}
