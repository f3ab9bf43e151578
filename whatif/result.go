package whatif

import (
	"math"
	"slices"
	"time"

	"github.com/airouter/airouter/domain"
)

// Ban is one ban a run had: the pair (Model "*": the whole credential), who
// imposed it and by which rule (Reason), from Since until Until or for good,
// and Lifted when an admin unban or a newer ban ended it before that.
type Ban struct {
	ID         string        `json:"id,omitempty"`
	Credential string        `json:"credential"`
	Model      string        `json:"model"`
	Origin     domain.Origin `json:"origin"`
	ErrorCode  int           `json:"error_code"`
	Reason     string        `json:"reason,omitempty"`
	Since      time.Time     `json:"since"`
	Until      *time.Time    `json:"until,omitempty"`
	Permanent  bool          `json:"permanent"`
	Lifted     *time.Time    `json:"lifted,omitempty"`
}

func (b *Ban) key() domain.Key { return domain.Key{Credential: b.Credential, Model: b.Model} }

// end is when the ban stopped applying; zero for a permanent ban never
// lifted.
func (b *Ban) end() time.Time {
	if b.Lifted != nil {
		return *b.Lifted
	}
	if b.Permanent || b.Until == nil {
		return time.Time{}
	}
	return *b.Until
}

func (b *Ban) activeAt(t time.Time) bool {
	e := b.end()
	return !t.Before(b.Since) && (e.IsZero() || t.Before(e))
}

// same reports whether c is the same ban as b: the same pair, origin, code
// and rule, from the same moment to the same end.
func (b *Ban) same(c *Ban) bool {
	return b.key() == c.key() && b.Origin == c.Origin && b.ErrorCode == c.ErrorCode &&
		b.Reason == c.Reason && b.Since.Equal(c.Since) && b.end().Equal(c.end())
}

// overlaps reports whether b and c on the same key applied at some common
// moment.
func (b *Ban) overlaps(c *Ban) bool {
	if b.key() != c.key() {
		return false
	}
	be, ce := b.end(), c.end()
	return (be.IsZero() || c.Since.Before(be)) && (ce.IsZero() || b.Since.Before(ce))
}

// Result is what the two runs did in the window.
type Result struct {
	Window   Window `json:"window"`
	Outcomes int    `json:"outcomes"`
	// Assumption states how the proposed run treats outcomes.
	Assumption string     `json:"assumption"`
	Actual     RunResult  `json:"actual"`
	Proposed   RunResult  `json:"proposed"`
	Diff       Diff       `json:"diff"`
	Diverted   []Diverted `json:"diverted"`
	// Elsewhere and Failed count Diverted by what would have become of them.
	Elsewhere int `json:"elsewhere"`
	Failed    int `json:"failed"`
}

// Window is the span of time the answer covers.
type Window struct {
	From  time.Time `json:"from"`
	Until time.Time `json:"until"`
}

// RunResult is one run's bans that applied in the window, and how many
// pair-minutes they kept pairs out of rotation within it.
type RunResult struct {
	Bans        []*Ban  `json:"bans"`
	PairMinutes float64 `json:"pair_minutes"`
}

// Diff sets the proposed bans against the actual ones, per pair: a ban in
// both runs is unchanged and not listed; overlapping but different bans are
// changed; the rest were added or removed by the proposed rules.
type Diff struct {
	Added   []*Ban   `json:"added"`
	Removed []*Ban   `json:"removed"`
	Changed []Change `json:"changed"`
}

// Change is one ban the proposed rules would have made different.
type Change struct {
	Actual   *Ban `json:"actual"`
	Proposed *Ban `json:"proposed"`
}

// Empty reports whether the proposed rules change no ban.
func (d Diff) Empty() bool { return len(d.Added)+len(d.Removed)+len(d.Changed) == 0 }

// Result sets the two runs side by side.
func (r *Run) Result() Result {
	w := Window{From: r.opt.From.UTC(), Until: r.opt.Until.UTC()}
	if w.From.IsZero() {
		w.From = r.first
	}
	if w.Until.IsZero() {
		w.Until = r.last
	}
	res := Result{Window: w, Outcomes: r.outcomes, Assumption: Assumption,
		Actual: runResult(r.actual.bans, w), Proposed: runResult(r.proposed.bans, w),
		Diverted: r.diverted}
	if res.Diverted == nil {
		res.Diverted = []Diverted{}
	}
	res.Diff = diff(res.Actual.Bans, res.Proposed.Bans)
	for _, d := range r.diverted {
		if d.Outcome == WentElsewhere {
			res.Elsewhere++
		} else {
			res.Failed++
		}
	}
	return res
}

// runResult keeps the bans that applied within w, ordered by pair then
// start, and adds up their pair-minutes within it.
func runResult(all []*Ban, w Window) RunResult {
	out := RunResult{Bans: []*Ban{}}
	var total time.Duration
	for _, b := range all {
		from, to := b.Since, b.end()
		if from.Before(w.From) {
			from = w.From
		}
		if to.IsZero() || to.After(w.Until) {
			to = w.Until
		}
		if !b.Since.After(w.Until) && (b.end().IsZero() || b.end().After(w.From)) {
			out.Bans = append(out.Bans, b)
			if to.After(from) {
				total += to.Sub(from)
			}
		}
	}
	slices.SortStableFunc(out.Bans, func(x, y *Ban) int {
		if c := x.key().Compare(y.key()); c != 0 {
			return c
		}
		return x.Since.Compare(y.Since)
	})
	out.PairMinutes = math.Round(total.Minutes()*100) / 100
	return out
}

// diff pairs the bans of the two runs up, per pair in start order. Only
// bans on one key can match, so each ban is compared with the proposed
// bans on its own key: the cost follows the bans a key holds, not all of
// the run's.
func diff(actual, proposed []*Ban) Diff {
	onKey := map[domain.Key][]int{} // indexes into proposed, in its order
	for i, p := range proposed {
		onKey[p.key()] = append(onKey[p.key()], i)
	}
	return pairUp(actual, proposed, func(a *Ban) []int { return onKey[a.key()] })
}

// pairUp matches each actual ban with the first unused proposed ban among
// its candidates (indexes into proposed, in order) that is the same ban,
// then the rest with the first that overlaps it; what is left on either
// side was removed or added.
func pairUp(actual, proposed []*Ban, candidates func(*Ban) []int) Diff {
	d := Diff{Added: []*Ban{}, Removed: []*Ban{}, Changed: []Change{}}
	used := make([]bool, len(proposed))
	var rest []*Ban
	for _, a := range actual {
		if i := pick(proposed, candidates(a), used, a.same); i >= 0 {
			used[i] = true
			continue
		}
		rest = append(rest, a)
	}
	for _, a := range rest {
		if i := pick(proposed, candidates(a), used, a.overlaps); i >= 0 {
			used[i] = true
			d.Changed = append(d.Changed, Change{Actual: a, Proposed: proposed[i]})
			continue
		}
		d.Removed = append(d.Removed, a)
	}
	for i, p := range proposed {
		if !used[i] {
			d.Added = append(d.Added, p)
		}
	}
	return d
}

// pick is the first of the bans bs[at...] not used yet that match
// accepts, or -1.
func pick(bs []*Ban, at []int, used []bool, match func(*Ban) bool) int {
	for _, i := range at {
		if !used[i] && match(bs[i]) {
			return i
		}
	}
	return -1
}
