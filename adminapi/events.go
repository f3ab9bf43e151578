package adminapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"
	"github.com/jonboulle/clockwork"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/eventjson"
	"github.com/airouter/airouter/incident"
	"github.com/airouter/airouter/redact"
)

// GET /api/events streams the log as Server-Sent Events, for browsers
// (EventSource) and scripts (curl -N) that follow bans without a NATS
// client. Each event is
//
//	id: <its log position, "41" or "41.2">
//	event: <its kind>
//	data: <its JSON as the log holds it, as export writes it>
//
// from now on, or from ?since= (a position, an RFC 3339 time or a
// duration back from now); Last-Event-ID resumes right after the position
// it names. ?kind=, ?credential= and ?model= filter (each repeatable or a
// comma list; within one a value matches any of its list, across them all
// must match, by incident.Filter's rule). Every subscriber has its own
// ordered consumer on the log from its position, so none waits for
// another; a comment line every Heartbeat keeps proxies from closing an
// idle stream.

// Defaults of EventsOptions.
const (
	DefaultEventsHeartbeat   = 15 * time.Second
	DefaultEventsSubscribers = 64
	DefaultEventsBuffer      = 4096
	DefaultEventsWrite       = 10 * time.Second
)

// EventLog is the log as GET /api/events reads it; the wiring adapts
// transport/eventlog's Log to it.
type EventLog interface {
	// Consume delivers every event from stream sequence from on, in log
	// order, then the new ones, until stop is called or ctx ends
	// (eventlog.Log.Consume). fn must not block.
	Consume(ctx context.Context, from uint64, fn func(ev domain.Event, pending uint64)) (stop func(), err error)
	// LastSeq is the log's last stream sequence.
	LastSeq(ctx context.Context) (uint64, error)
	// SeqAt is the first sequence stored at or after t (eventlog.Log.SeqAt).
	SeqAt(ctx context.Context, t time.Time) (uint64, error)
}

// EventsOptions configure GET /api/events.
type EventsOptions struct {
	// Log is the log streamed. Required.
	Log EventLog
	// Clock makes the heartbeat's ticker; nil is the real clock. Write
	// deadlines stay on the wall clock: the network stack reads them.
	Clock clockwork.Clock
	// Heartbeat, Subscribers, Buffer and Write are zero for their
	// defaults: the interval of heartbeat comments, the most streams open
	// at once (one more is 503), the events held for a subscriber that
	// reads slower than the log grows (past them it is cut, and resumes
	// with Last-Event-ID), and how long one write may take.
	Heartbeat   time.Duration
	Subscribers int
	Buffer      int
	Write       time.Duration
}

// eventStream serves GET /api/events.
type eventStream struct {
	a     *API
	o     EventsOptions
	slots chan struct{}
}

// RegisterEvents adds GET /api/events over o.Log to r; without a Log it
// adds nothing (a replayed API has no live log to stream).
func (a *API) RegisterEvents(r *mux.Router, o EventsOptions) {
	if o.Log == nil {
		return
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	o.Heartbeat = cmpOr(o.Heartbeat, DefaultEventsHeartbeat)
	o.Subscribers = cmpOr(o.Subscribers, DefaultEventsSubscribers)
	o.Buffer = cmpOr(o.Buffer, DefaultEventsBuffer)
	o.Write = cmpOr(o.Write, DefaultEventsWrite)
	s := &eventStream{a: a, o: o, slots: make(chan struct{}, o.Subscribers)}
	r.Handle("/api/events", a.admin(s.serve, http.MethodGet))
}

func cmpOr[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// subscription is what one request asked for: where to start, what to
// skip before it, and what to keep.
type subscription struct {
	from  uint64
	after domain.Pos // skip events at or before it (resuming)
	first domain.Pos // skip events before it (?since=<position>)
	since time.Time  // skip events stamped before it (?since=<time>)
	keep  []incident.Filter
}

func (s *eventStream) serve(w http.ResponseWriter, r *http.Request) error {
	sub, err := s.subscribe(r)
	if err != nil {
		return err
	}
	streams := s.a.metrics.streams
	select {
	case s.slots <- struct{}{}:
		streams.open.Inc()
		defer func() { <-s.slots; streams.open.Dec() }()
	default:
		streams.refused.Inc()
		return &httpError{status: http.StatusServiceUnavailable,
			msg: fmt.Sprintf("too many event streams open (the limit is %d); retry later", s.o.Subscribers)}
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	rc := http.NewResponseController(w)
	events := make(chan domain.Event, s.o.Buffer)
	var slow atomic.Bool
	stop, err := s.o.Log.Consume(ctx, sub.from, func(ev domain.Event, _ uint64) {
		select {
		case events <- ev:
		default:
			// The subscriber reads slower than the log grows: cut it
			// rather than hold more, and unblock a write in progress.
			if !slow.Swap(true) {
				cancel()
				_ = rc.SetWriteDeadline(time.Now())
			}
		}
	})
	if err != nil {
		return s.unavailable("follow the log", err)
	}
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s.pump(ctx, w, rc, sub, events)
	if slow.Load() {
		streams.cut.Inc()
		s.a.log.Warn("event stream cut: the client reads slower than the log grows", "remote", r.RemoteAddr)
	}
	return nil
}

// pump writes events and heartbeats until ctx ends or a write fails.
func (s *eventStream) pump(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, sub subscription, events <-chan domain.Event) {
	tick := s.o.Clock.NewTicker(s.o.Heartbeat)
	defer tick.Stop()
	buf := []byte("retry: 1000\n\n")
	for {
		if len(buf) > 0 {
			_ = rc.SetWriteDeadline(time.Now().Add(s.o.Write))
			if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
				return
			}
			buf = buf[:0]
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.Chan():
			buf = append(buf, ": heartbeat\n\n"...)
		case ev := <-events:
			buf = sub.frame(buf, ev)
			for n := len(events); n > 0 && len(buf) < 64<<10; n-- {
				buf = sub.frame(buf, <-events)
			}
		}
	}
}

// frame appends ev as an SSE event when the subscription keeps it.
func (sub subscription) frame(dst []byte, ev domain.Event) []byte {
	p := ev.Pos()
	if ev.Kind == "" || !sub.after.Before(p) || p.Before(sub.first) || ev.At.Before(sub.since) {
		return dst
	}
	if !sub.match(ev) {
		return dst
	}
	data, err := eventjson.Encode(ev)
	if err != nil {
		return dst
	}
	dst = append(dst, "id: "...)
	dst = p.AppendTo(dst)
	dst = append(dst, "\nevent: "...)
	dst = append(dst, ev.Kind...)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, data...)
	return append(dst, "\n\n"...)
}

func (sub subscription) match(ev domain.Event) bool {
	for _, f := range sub.keep {
		if f.Match(ev) {
			return true
		}
	}
	return false
}

// subscribe reads the request's start and filters; a bad value is a 400
// naming it.
func (s *eventStream) subscribe(r *http.Request) (subscription, error) {
	q := r.URL.Query()
	var sub subscription
	if err := onlyParams(q, "/api/events", []string{"since", "kind", "credential", "model"}, []string{"since"}); err != nil {
		return sub, err
	}
	kinds, err := incident.ParseKinds(strings.Join(q["kind"], ","))
	if err != nil {
		return sub, badRequest("kind: %v", err)
	}
	creds, models := list(q["credential"]), list(q["model"])
	for _, c := range creds {
		for _, m := range models {
			sub.keep = append(sub.keep, incident.Filter{Credential: c, Model: m, Kinds: kinds})
		}
	}
	ctx := r.Context()
	if id := strings.TrimSpace(r.Header.Get("Last-Event-ID")); id != "" {
		p, ok := parsePos(id)
		if !ok {
			return sub, badRequest("Last-Event-ID %q is not a log position such as 41 or 41.2", redact.N(id, 40))
		}
		sub.from, sub.after = p.Seq, p
		return sub, nil
	}
	since := strings.TrimSpace(q.Get("since"))
	if p, ok := parsePos(since); ok && since != "" {
		sub.from, sub.first = p.Seq, p
		return sub, nil
	}
	if len(since) > maxMomentLen {
		return sub, badRequest("since is %d characters long: give a log position, an RFC 3339 time or a duration back from now", len(since))
	}
	t, err := incident.ParseMoment(since, s.a.now())
	if err != nil {
		return sub, badRequest("since: %v, nor a log position such as 41", err)
	}
	if t.IsZero() && since != "" {
		return sub, badRequest("since %q is the zero time, before any log: give a later moment or the position 1", since)
	}
	if t.IsZero() {
		last, err := s.o.Log.LastSeq(ctx)
		if err != nil {
			return sub, s.unavailable("read the log's last position", err)
		}
		sub.from = last + 1
		return sub, nil
	}
	sub.since = t
	if sub.from, err = s.o.Log.SeqAt(ctx, t.Add(-incident.SeekMargin)); err != nil {
		return sub, s.unavailable("find the position of since", err)
	}
	return sub, nil
}

// unavailable logs why the log could not be read and answers 503.
func (s *eventStream) unavailable(what string, err error) error {
	s.a.log.Error("event stream: "+what, "error", redact.String(err.Error()))
	return &httpError{status: http.StatusServiceUnavailable, msg: "the event log is not available"}
}

// list reads repeatable, comma-separated values; none is one "" (any).
func list(vs []string) []string {
	var out []string
	for _, v := range vs {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// parsePos reads a log position as domain.Pos.String writes it: "41" or
// "41.2".
func parsePos(s string) (domain.Pos, bool) {
	seqPart, idxPart, hasIdx := strings.Cut(s, ".")
	seq, err := strconv.ParseUint(seqPart, 10, 64)
	if err != nil || seq == 0 {
		return domain.Pos{}, false
	}
	p := domain.Pos{Seq: seq}
	if hasIdx {
		idx, err := strconv.ParseUint(idxPart, 10, 32)
		if err != nil {
			return domain.Pos{}, false
		}
		p.Index = uint32(idx)
	}
	return p, true
}
