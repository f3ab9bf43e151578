package whatif

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// WriteJSON writes the result as one JSON document.
func (res Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// WriteText writes the result for a person: the window, the assumption, the
// changed bans, pair-minutes, and the requests the proposed rules would
// have sent elsewhere or failed.
func (res Result) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "window %s .. %s: %d outcomes\n", stamp(res.Window.From), stamp(res.Window.Until), res.Outcomes)
	fmt.Fprintf(&b, "assumption: %s\n\n", res.Assumption)
	fmt.Fprintf(&b, "bans: %d actual, %d proposed\n", len(res.Actual.Bans), len(res.Proposed.Bans))
	fmt.Fprintf(&b, "banned pair-minutes: %s actual, %s proposed\n\n", minutes(res.Actual.PairMinutes), minutes(res.Proposed.PairMinutes))
	if res.Diff.Empty() {
		b.WriteString("no ban would change\n")
	}
	for _, x := range res.Diff.Added {
		fmt.Fprintf(&b, "+ added    %s\n", banLine(x))
	}
	for _, x := range res.Diff.Removed {
		fmt.Fprintf(&b, "- removed  %s\n", banLine(x))
	}
	for _, c := range res.Diff.Changed {
		fmt.Fprintf(&b, "~ changed  %s\n           now %s\n", banLine(c.Actual), banLine(c.Proposed))
	}
	if len(res.Diverted) > 0 {
		fmt.Fprintf(&b, "\n%d requests went to pairs the proposed rules had out of rotation: %d would have gone elsewhere, %d would have failed\n",
			len(res.Diverted), res.Elsewhere, res.Failed)
		for _, d := range res.Diverted {
			to := "failed (no candidate left)"
			if d.Outcome == WentElsewhere {
				to = "elsewhere (" + strings.Join(d.To, ", ") + ")"
			}
			fmt.Fprintf(&b, "  %s  %-8s %s/%s  %s: %s\n", stamp(d.At), d.Pos, d.Credential, d.Model, d.BlockedBy, to)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// banLine is one ban on a line: pair, span, origin and rule.
func banLine(x *Ban) string {
	end := "permanent"
	if !x.Permanent && x.Until != nil {
		end = "until " + stamp(*x.Until)
	}
	if x.Lifted != nil {
		end += ", lifted " + stamp(*x.Lifted)
	}
	rule := x.Reason
	if rule == "" {
		rule = "no reason given"
	}
	return fmt.Sprintf("%s/%s  %s, %s  %s: %s", x.Credential, x.Model, stamp(x.Since), end, x.Origin, rule)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func minutes(m float64) string { return fmt.Sprintf("%.2f", m) }
