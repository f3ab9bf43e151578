package incident

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// Timeline writes the log as lines a person reads during an incident, one
// event a line in log order:
//
//	2026-11-29T03:12:04Z  cred-a  gpt-4o  banned (fail2ban) 3 x 429 in 41 s, rule 429: max_attempts 3, ban 5m, until 03:17:04
//
// Outcomes are summarised per credential and model: a summary line is
// written when the minute changes and before any other line, so the
// outcomes that led to a ban are summed up just above it. It folds every
// event (filtered or not) into its own projection State, the same fold the
// router runs, to know when the failures behind a ban began.
type Timeline struct {
	w    *bufio.Writer
	keep Filter
	// perOutcome writes a line per outcome instead of summaries.
	perOutcome bool

	state *projections.State
	// change is what the event being added changed in the ban table.
	change  projections.Change
	firsts  map[failureKey]firstFailure
	sum     summaries
	skipped uint64
	err     error // the first write error
}

// failureKey names one counter of the fold: a pair and a status code.
type failureKey struct {
	cred, model string
	code        int
}

// firstFailure is when a counter last started from zero, and its count.
type firstFailure struct {
	at    time.Time
	count int
}

// NewTimeline writes the events keep passes to w, outcomes summarised.
func NewTimeline(w io.Writer, keep Filter) *Timeline {
	return &Timeline{
		w:      bufio.NewWriterSize(w, 64<<10),
		keep:   keep,
		state:  projections.NewState(),
		firsts: map[failureKey]firstFailure{},
		sum:    summaries{pairs: map[domain.Key]*summary{}},
	}
}

// NewLiveTimeline is a Timeline that writes a line per outcome, for a
// follower of the live log: it does not wait for a minute to end.
func NewLiveTimeline(w io.Writer, keep Filter) *Timeline {
	t := NewTimeline(w, keep)
	t.perOutcome = true
	return t
}

// Add takes the next event in log order. It returns the first error
// writing failed with, so a walk stops when no one reads any more.
func (t *Timeline) Add(ev domain.Event) error {
	t.state, t.change = projections.ApplyReport(t.state, ev)
	if ev.Kind == "" {
		t.skipped++
		return t.err
	}
	if ev.Kind == domain.KindOutcomeRecorded && ev.Outcome != nil {
		t.noteFailure(ev)
	}
	if !t.keep.Match(ev) || (ev.Kind == domain.KindReplicaHeartbeat && !t.keep.Kinds[ev.Kind]) {
		// Heartbeats, two a minute per replica, are shown only when asked
		// for by kind (-kind heartbeat).
		return t.err
	}
	if ev.Kind == domain.KindOutcomeRecorded && ev.Outcome != nil && !t.perOutcome {
		if t.sum.open && minute(ev.At) > t.sum.minute {
			t.flushSummaries()
		}
		t.sum.add(ev)
		return t.err
	}
	t.flushSummaries()
	t.line(ev)
	return t.err
}

// Flush writes the buffered lines out (summaries stay open).
func (t *Timeline) Flush() error {
	if err := t.w.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
}

// Finish writes what is pending and reports a write error.
func (t *Timeline) Finish() error {
	t.flushSummaries()
	return t.Flush()
}

// Unreadable is how many events this version could not read.
func (t *Timeline) Unreadable() uint64 { return t.skipped }

// noteFailure records when the counter an outcome raised started, reading
// the fold's own counters (projections.State.Facts) so that resets by a
// success or a lifted ban are exactly the router's.
func (t *Timeline) noteFailure(ev domain.Event) {
	o := ev.Outcome
	code := o.Code()
	if o.Success() || o.Class == domain.ClassCanceled || code == 0 || (code >= 200 && code < 300) {
		return
	}
	f := t.state.Facts(ev)
	n := f.Counts[code]
	if f.Banned || n == 0 {
		return // the fold ignored the outcome
	}
	k := failureKey{o.Credential, o.Model, code}
	switch e, ok := t.firsts[k]; {
	case n == 1:
		t.firsts[k] = firstFailure{at: ev.At, count: 1}
	case ok:
		e.count = n
		t.firsts[k] = e
	}
}

// line writes one event that is not a summarised outcome.
func (t *Timeline) line(ev domain.Event) {
	switch {
	case ev.Outcome != nil:
		o := ev.Outcome
		what := outcomeLabel(*o)
		if o.Status > 0 && !o.Success() {
			what += " " + string(o.Class)
		}
		text := fmt.Sprintf("%s, %d ms, attempt %d", what, o.LatencyMS, o.Attempt)
		if o.RequestID != "" {
			text += ", request " + o.RequestID
		}
		t.write(ev.At, o.Credential, o.Model, text)
	case ev.Ban != nil && t.notImposed(ev):
		t.write(ev.At, ev.Ban.Credential, ev.Ban.Model, t.notImposedText(ev))
	case ev.Ban != nil:
		t.write(ev.At, ev.Ban.Credential, ev.Ban.Model, t.banText(ev))
	case ev.Unban != nil:
		u := ev.Unban
		text := "ban expired"
		if u.By == domain.LiftedByRecovery {
			text = "unbanned (recovery): a request to it succeeded"
		}
		if u.By == domain.LiftedByAdmin {
			text = "unbanned (admin)"
			if u.Model == "" {
				text = "unbanned (admin), every ban of the credential"
			}
		}
		model := u.Model
		if model == "" {
			model = domain.AllModels
		}
		t.write(ev.At, u.Credential, model, text)
	case ev.Cooldown != nil:
		t.write(ev.At, ev.Cooldown.Credential, ev.Cooldown.Model, cooldownText(ev))
	case ev.Withheld != nil:
		t.write(ev.At, ev.Withheld.Credential, ev.Withheld.Model, withheldText(*ev.Withheld))
	case ev.Shadowed != nil:
		t.write(ev.At, ev.Shadowed.Credential, ev.Shadowed.Model, t.shadowText(ev))
	case ev.Bench != nil:
		b := ev.Bench
		text := "benched on every credential until " + clock(b.Until, ev.At)
		if b.Reason != "" {
			text += ": " + b.Reason
		}
		if len(b.Credentials) > 0 {
			text += " [" + strings.Join(b.Credentials, ", ") + "]"
		}
		t.write(ev.At, domain.AllModels, b.Model, text)
	case ev.Unbench != nil:
		t.write(ev.At, domain.AllModels, ev.Unbench.Model, "unbenched (admin): routed again on every credential")
	case ev.Probe != nil:
		t.write(ev.At, ev.Probe.Credential, ev.Probe.Model, probeText(*ev.Probe))
	case ev.Heartbeat != nil:
		t.write(ev.At, "-", "-", heartbeatText(*ev.Heartbeat))
	case ev.CooldownLift != nil:
		t.write(ev.At, ev.CooldownLift.Credential, ev.CooldownLift.Model,
			"auth cooldown lifted (recovery): a probe request with the credential succeeded")
	case ev.Policy != nil:
		t.write(ev.At, "-", "-", policyText(*ev.Policy))
	case ev.Settings != nil:
		s := ev.Settings
		t.write(ev.At, "-", "-", fmt.Sprintf("fallback settings changed: max_hops %d, time_budget %s, expose_detail_headers %t",
			s.MaxHops, domain.ShortDuration(time.Duration(s.TimeBudget).Round(time.Millisecond)), s.ExposeDetailHeaders))
	}
}

// banText says why a pair was banned and until when.
func (t *Timeline) banText(ev domain.Event) string {
	b := ev.Ban
	origin := string(b.Origin)
	if origin == "" {
		origin = "unknown origin"
	}
	why := b.Reason
	switch b.Origin {
	case domain.OriginFail2Ban:
		why = t.fail2banWhy(*b)
	case domain.OriginAdmin:
		why = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(why, "admin"), ":"))
	}
	text := "banned (" + origin + ")"
	if why != "" {
		text += " " + why
	}
	if b.Permanent || b.Until == nil {
		return text + ", permanent"
	}
	return text + ", until " + clock(*b.Until, ev.At)
}

// fail2banWhy turns the policy's reason, "3 x 429 (rule 429: max_attempts
// 3, ban 5m)", into "3 x 429 in 41 s, rule 429: max_attempts 3, ban 5m",
// with the time from the first of the failures to the ban when the log
// holds them.
func (t *Timeline) fail2banWhy(b domain.Ban) string {
	head, rule := b.Reason, ""
	if i := strings.Index(head, " ("); i > 0 && strings.HasSuffix(head, ")") {
		head, rule = head[:i], head[i+2:len(head)-1]
	}
	if e, ok := t.firsts[failureKey{b.Credential, b.Model, b.ErrorCode}]; ok &&
		b.Failures > 1 && e.count >= b.Failures && !e.at.After(b.Since) {
		head += " in " + spanText(b.Since.Sub(e.at))
	}
	if rule != "" {
		return head + ", " + rule
	}
	return head
}

func (t *Timeline) write(at time.Time, cred, model, text string) {
	if model == "" {
		model = "-"
	}
	t.w.WriteString(Stamp(at))
	t.w.WriteString("  ")
	t.w.WriteString(cred)
	t.w.WriteString("  ")
	t.w.WriteString(model)
	t.w.WriteString("  ")
	t.w.WriteString(text)
	if err := t.w.WriteByte('\n'); err != nil && t.err == nil {
		t.err = err // bufio keeps the first error: every later write returns it
	}
}

// Stamp renders a moment as RFC 3339 in UTC, to the second.
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z07:00") }

// clock renders an end: its time of day when it falls on the same UTC
// day as the event, else the full stamp.
func clock(end, at time.Time) string {
	e, a := end.UTC(), at.UTC()
	if e.YearDay() == a.YearDay() && e.Year() == a.Year() {
		return e.Format("15:04:05")
	}
	return Stamp(e)
}

// spanText renders a span for a person: "350 ms", "41 s", "4m10s".
func spanText(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < 2*time.Minute:
		return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + " s"
	}
	return domain.ShortDuration(d.Round(time.Second))
}

// minute is the Unix minute of t.
func minute(t time.Time) int64 { return t.Unix() / 60 }
