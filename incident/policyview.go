package incident

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// ViewPolicy is the ban policy in force at a moment (replay -at T -view
// policy): the latest policy.changed folded by then.
const ViewPolicy View = "policy"

// PolicyAt is the policy view's document.
type PolicyAt struct {
	At time.Time `json:"at"`
	// Source is "log" for a policy announced on the log, "file" for the
	// config file's policy on a log that holds none by then (it is in
	// force there), "none" without either.
	Source      string            `json:"source"`
	Fingerprint string            `json:"fingerprint,omitempty"`
	AnnouncedBy string            `json:"announced_by,omitempty"`
	ChangedAt   *time.Time        `json:"changed_at,omitempty"`
	Policy      *domain.PolicyDoc `json:"policy,omitempty"`
}

// PolicyView renders the policy in force in snap at moment at as indented
// JSON; own is the config file's policy, in force on a log without a
// policy.changed by then (nil when there is no file).
func PolicyView(snap *projections.Snapshot, at time.Time, own *domain.BanPolicy) ([]byte, error) {
	v := PolicyAt{At: at.UTC(), Source: "none"}
	switch in := snap.Policy(); {
	case in != nil:
		changed := in.At
		doc := in.Policy
		v.Source, v.Fingerprint, v.AnnouncedBy, v.ChangedAt, v.Policy = "log", in.Fingerprint, in.Replica, &changed, &doc
	case own != nil:
		doc := domain.DocOf(*own)
		v.Source, v.Fingerprint, v.Policy = "file", doc.Fingerprint(), &doc
	}
	b, err := json.MarshalIndent(v, "", "  ")
	return append(b, '\n'), err
}

// policyText is the timeline's line for a policy.changed: its fingerprint,
// who announced it, and the rules that decide most bans.
func policyText(c domain.PolicyChange) string {
	d := c.Policy
	parts := []string{fmt.Sprintf("max_attempts %d, ban %s", d.Default.MaxAttempts, ruleLength(d.Default))}
	if len(d.Codes) > 0 {
		parts = append(parts, fmt.Sprintf("codes %v", d.Codes))
	}
	if n := len(d.Rules); n > 0 {
		parts = append(parts, fmt.Sprintf("%d code rules", n))
	}
	if n := len(d.Credentials); n > 0 {
		parts = append(parts, fmt.Sprintf("%d credential overrides", n))
	}
	if d.Bench.Failures > 0 {
		parts = append(parts, fmt.Sprintf("bench %d in %s", d.Bench.Failures, shortDur(d.Bench.Window)))
	}
	if d.MaxEjectionPercent > 0 && d.MaxEjectionPercent < 100 {
		parts = append(parts, fmt.Sprintf("ejection cap %d%%", d.MaxEjectionPercent))
	}
	if d.Recovery.ProbeAfter > 0 {
		parts = append(parts, "probes after "+shortDur(d.Recovery.ProbeAfter))
	}
	by := ""
	if c.Replica != "" {
		by = " by " + c.Replica
	}
	return "policy changed to " + c.Fingerprint + by + ": " + strings.Join(parts, ", ")
}

func ruleLength(r domain.RuleDoc) string {
	if r.Permanent {
		return "permanent"
	}
	return shortDur(r.Duration)
}

func shortDur(d domain.Duration) string { return domain.ShortDuration(time.Duration(d)) }
