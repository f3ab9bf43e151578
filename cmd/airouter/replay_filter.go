package main

import (
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/airouter/airouter/domain"
)

// filterFlags are the flags that pick events: a time window, a credential,
// a model, kinds.
type filterFlags struct {
	since, until      string
	credential, model string
	kind              string
}

func (f *filterFlags) register(fs *flag.FlagSet, withTime, withPair bool) {
	if withTime {
		fs.StringVar(&f.since, "since", "", "only events at or after `T` (RFC 3339, or a duration back from now such as 2h)")
		fs.StringVar(&f.until, "until", "", "only events at or before `T` (RFC 3339, or a duration back from now)")
	}
	if withPair {
		fs.StringVar(&f.credential, "credential", "", "only events about credential `NAME`")
		fs.StringVar(&f.model, "model", "", "only events about model `ID`")
		fs.StringVar(&f.kind, "kind", "", "only events of these `KINDS`, comma-separated: outcome, ban, unban, cooldown, bench, settings (or full kinds such as ban.imposed)")
	}
}

// given reports whether any filter flag was set.
func (f *filterFlags) given() bool {
	return f.since != "" || f.until != "" || f.credential != "" || f.model != "" || f.kind != ""
}

// build turns the flags into a filter; relative times count back from now.
func (f *filterFlags) build(now time.Time) (eventFilter, error) {
	var ef eventFilter
	var err error
	if ef.since, err = parseMoment(f.since, now); err != nil {
		return ef, fmt.Errorf("-since: %w", err)
	}
	if ef.until, err = parseMoment(f.until, now); err != nil {
		return ef, fmt.Errorf("-until: %w", err)
	}
	if !ef.since.IsZero() && !ef.until.IsZero() && ef.until.Before(ef.since) {
		return ef, fmt.Errorf("-until %s is before -since %s", stamp(ef.until), stamp(ef.since))
	}
	ef.credential, ef.model = strings.TrimSpace(f.credential), strings.TrimSpace(f.model)
	if ef.kinds, err = parseKinds(f.kind); err != nil {
		return ef, fmt.Errorf("-kind: %w", err)
	}
	return ef, nil
}

// parseMoment reads an RFC 3339 time (fractional seconds allowed) or a
// duration back from now ("90m", "2h"); "" is no bound.
func parseMoment(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%q is neither an RFC 3339 time (2026-11-29T03:12:00Z) nor a duration back from now (2h)", s)
	}
	return now.Add(-d).UTC(), nil
}

// kindNames maps the short names (the subjects' kind tokens) to kinds.
var kindNames = map[string]domain.Kind{
	"outcome":  domain.KindOutcomeRecorded,
	"ban":      domain.KindBanImposed,
	"unban":    domain.KindBanLifted,
	"cooldown": domain.KindCooldownStarted,
	"bench":    domain.KindModelBenched,
	"settings": domain.KindFallbackSettingsChanged,
}

func parseKinds(s string) (map[domain.Kind]bool, error) {
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

// eventFilter picks events. The zero filter keeps every event.
type eventFilter struct {
	since, until      time.Time
	credential, model string
	kinds             map[domain.Kind]bool
}

// match reports whether ev passes. A credential-wide ban or unban matches
// any model; a bench matches the credentials it names.
func (f eventFilter) match(ev domain.Event) bool {
	if (!f.since.IsZero() && ev.At.Before(f.since)) || (!f.until.IsZero() && ev.At.After(f.until)) {
		return false
	}
	if f.kinds != nil && !f.kinds[ev.Kind] {
		return false
	}
	if f.credential == "" && f.model == "" {
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
		cred, model = ev.Cooldown.Credential, ev.Cooldown.Model
	case ev.Bench != nil:
		model, creds = ev.Bench.Model, ev.Bench.Credentials
	default:
		return false // settings concern no credential or model
	}
	if f.credential != "" && cred != f.credential && !slices.Contains(creds, f.credential) {
		return false
	}
	return f.model == "" || model == f.model || anyModel
}

// past reports whether a walk in log order may stop at ev: it is stamped
// more than seekMargin after the window's end, and events are stamped in
// nearly the order they are stored.
func (f eventFilter) past(ev domain.Event) bool {
	return !f.until.IsZero() && ev.At.After(f.until.Add(seekMargin))
}
