package adminapi

import (
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

// A shadow ban is drawn as a hint on its pair: still usable ("ok"), in the
// warning colour, with the rule it would have banned by on hover.
func TestDashboardDrawsAShadowBanAsAHint(t *testing.T) {
	ctx := browser(t)
	r := newRig(t)
	until := t0.Add(5 * time.Minute)
	reason := "2 x 400 (rule 400: max_attempts 2, ban 5m)"
	r.publish(domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanShadowed, ID: "shadow/openai-1/gpt-4o/1", At: t0,
		Shadowed: &domain.Ban{Credential: "openai-1", Model: "gpt-4o", Origin: domain.OriginFail2Ban,
			Reason: reason, ErrorCode: 400, Since: t0, Until: &until, Failures: 2}})
	v := openDashboard(t, ctx, r.srv.URL+"/vhealth")
	row, ok := v.Rows["openai-1:gpt-4o"]
	if !ok {
		t.Fatalf("no row for openai-1:gpt-4o in %v", v.Rows)
	}
	if !strings.HasPrefix(row.Badge, "ok") || !strings.Contains(row.Badge, "would ban") {
		t.Errorf("badge %q, want the pair usable with a would-ban hint", row.Badge)
	}
	if !strings.Contains(row.Title, reason) {
		t.Errorf("hover %q does not name the rule %q", row.Title, reason)
	}
	if row.Color != v.Warn {
		t.Errorf("hint colour %s, want the warning colour %s", row.Color, v.Warn)
	}
	if other := v.Rows["openai-2:gpt-4o"]; strings.Contains(other.Badge, "would ban") {
		t.Errorf("openai-2:gpt-4o shows a hint it has no shadow ban for: %q", other.Badge)
	}
}
