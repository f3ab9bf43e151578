package incident

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
)

// Filter picks events: a time window, a credential, a model, kinds. The
// zero Filter keeps every event.
type Filter struct {
	// Since and Until bound the window by the events' own times; zero is
	// no bound.
	Since, Until time.Time
	// Credential and Model keep the events about them; "" is any.
	Credential, Model string
	// Kinds keeps only these kinds; nil is every kind.
	Kinds map[domain.Kind]bool
}

// Match reports whether ev passes. A credential-wide ban or unban matches
// any model; a bench matches the credentials it names.
func (f Filter) Match(ev domain.Event) bool {
	if (!f.Since.IsZero() && ev.At.Before(f.Since)) || (!f.Until.IsZero() && ev.At.After(f.Until)) {
		return false
	}
	if f.Kinds != nil && !f.Kinds[ev.Kind] {
		return false
	}
	if f.Credential == "" && f.Model == "" {
		return true
	}
	cred, model, anyModel := "", "", false
	var creds []string
	switch {
	case ev.Outcome != nil:
		cred, model = ev.Outcome.Credential, ev.Outcome.Model
	case ev.Ban != nil:
		cred, model, anyModel = ev.Ban.Credential, ev.Ban.Model, ev.Ban.Model == domain.AllModels || ev.Ban.Model == ""
	case ev.Unban != nil:
		cred, model, anyModel = ev.Unban.Credential, ev.Unban.Model, ev.Unban.Model == domain.AllModels || ev.Unban.Model == ""
	case ev.Cooldown != nil:
		cred, model, anyModel = ev.Cooldown.Credential, ev.Cooldown.Model, ev.Cooldown.Model == domain.AllModels
	case ev.Withheld != nil:
		cred, model = ev.Withheld.Credential, ev.Withheld.Model
	case ev.Shadowed != nil:
		cred, model = ev.Shadowed.Credential, ev.Shadowed.Model
	case ev.Probe != nil:
		cred, model = ev.Probe.Credential, ev.Probe.Model
	case ev.Bench != nil:
		model, creds = ev.Bench.Model, ev.Bench.Credentials
	case ev.Unbench != nil:
		if f.Credential != "" {
			return false // an unbench names no credential
		}
		model = ev.Unbench.Model
	default:
		return false // settings concern no credential or model
	}
	if f.Credential != "" && cred != f.Credential && !slices.Contains(creds, f.Credential) {
		return false
	}
	return f.Model == "" || model == f.Model || anyModel
}

// Past reports whether a walk in log order may stop at ev: it is stamped
// more than SeekMargin after the window's end, and events are stamped in
// nearly the order they are stored.
func (f Filter) Past(ev domain.Event) bool {
	return !f.Until.IsZero() && ev.At.After(f.Until.Add(SeekMargin))
}

// inWindow reports whether ev is stamped inside the time window.
func (f Filter) inWindow(ev domain.Event) bool {
	return (f.Since.IsZero() || !ev.At.Before(f.Since)) && (f.Until.IsZero() || !ev.At.After(f.Until))
}

// picksEvents reports whether the filter keeps events by what they are
// about or their kind, not only by time.
func (f Filter) picksEvents() bool {
	return f.Credential != "" || f.Model != "" || f.Kinds != nil
}

// ParseMoment reads an RFC 3339 time or a duration back from now, as
// domain.ParseMoment does; "" is no bound.
func ParseMoment(s string, now time.Time) (time.Time, error) { return domain.ParseMoment(s, now) }

// kindNames maps the short names (the subjects' kind tokens) to kinds.
var kindNames = map[string]domain.Kind{
	"outcome":   domain.KindOutcomeRecorded,
	"ban":       domain.KindBanImposed,
	"unban":     domain.KindBanLifted,
	"cooldown":  domain.KindCooldownStarted,
	"bench":     domain.KindModelBenched,
	"unbench":   domain.KindModelUnbenched,
	"settings":  domain.KindFallbackSettingsChanged,
	"withheld":  domain.KindBanWithheld,
	"shadow":    domain.KindBanShadowed,
	"probe":     domain.KindProbeClaimed,
	"policy":    domain.KindPolicyChanged,
	"heartbeat": domain.KindReplicaHeartbeat,
	"uncool":    domain.KindCooldownLifted,
}

// ParseKinds reads a comma-separated list of kinds, short (ban, outcome)
// or full (ban.imposed), as Filter.Kinds; "" is every kind (nil).
func ParseKinds(s string) (map[domain.Kind]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[domain.Kind]bool{}
	for _, part := range strings.Split(s, ",") {
		name := strings.TrimSpace(part)
		if k, ok := kindNames[name]; ok {
			out[k] = true
			continue
		}
		if k := domain.Kind(name); k.Known() {
			out[k] = true
			continue
		}
		names := make([]string, 0, len(kindNames))
		for n := range kindNames {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("unknown kind %q; want one of %s, or a full kind such as %s", name, strings.Join(names, ", "), domain.KindBanImposed)
	}
	return out, nil
}
