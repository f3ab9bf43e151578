package adminapi

import (
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/projections"
)

// An auth cooldown a recovery probe ended is logged at INFO with the
// cooldown it names, and the credential is usable again on /health.
func TestObserveCooldownLift(t *testing.T) {
	r := newRig(t)
	cd := domain.Cooldown{Credential: "openai-1", Model: domain.AllModels, Until: t0.Add(5 * time.Minute), Status: 401,
		Reason: "auth: 401", CauseSeq: 1, Since: t0}
	r.publish(outcome("o1", "openai-1", "gpt-4o", 401, t0),
		domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownStarted, ID: cd.ID(), At: t0, Cooldown: &cd},
		domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownLifted, ID: domain.CooldownLiftID(cd.ID()), At: t0.Add(time.Minute),
			CooldownLift: &domain.CooldownLift{Credential: "openai-1", Model: domain.AllModels, By: domain.LiftedByRecovery, CooldownID: cd.ID()}})
	var found bool
	for _, l := range r.logs.lines(t) {
		if l["@message"] == "Credential cooldown lifted (recovered: a probe request with it succeeded)" {
			found = l["@level"] == "info" && l["credential"] == "openai-1" && l["cooldown_id"] == cd.ID()
		}
	}
	if !found {
		t.Fatalf("no INFO line for the lift: %v", r.logs.lines(t))
	}
	if _, h := r.health(); h.Models["openai-1:gpt-4o"].CooldownUntil != nil {
		t.Fatalf("/health still shows the cooldown: %+v", h.Models["openai-1:gpt-4o"])
	}
}

// The dashboard's timeline ends an auth cooldown's bar where a recovery
// probe lifted it, and says why the credential cooled.
func TestTimelineEndsALiftedAuthCooldown(t *testing.T) {
	b := &timelineBuilder{tl: &Timeline{}, bans: map[domain.Key]int{}, benches: map[string]int{}}
	cd := domain.Cooldown{Credential: "openai-1", Model: domain.AllModels, Until: t0.Add(5 * time.Minute), Status: 401, Reason: "auth: 401", CauseSeq: 1}
	b.event(domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownStarted, At: t0, Cooldown: &cd}, projections.Change{})
	b.event(domain.Event{V: domain.SchemaVersion, Kind: domain.KindCooldownLifted, At: t0.Add(time.Minute),
		CooldownLift: &domain.CooldownLift{Credential: "openai-1", Model: domain.AllModels, By: domain.LiftedByRecovery, CooldownID: cd.ID()}}, projections.Change{})
	if len(b.tl.Intervals) != 1 || len(b.tl.Marks) != 0 {
		t.Fatalf("intervals %+v marks %+v, want the one cooldown", b.tl.Intervals, b.tl.Marks)
	}
	iv := b.tl.Intervals[0]
	if iv.Until == nil || !iv.Until.Equal(t0.Add(time.Minute)) || iv.End != "lifted" || iv.Reason != "401 auth: 401" {
		t.Fatalf("interval %+v, want it ended by the lift a minute in", iv)
	}
}
