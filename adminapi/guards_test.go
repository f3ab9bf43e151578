package adminapi

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

func withheldEv(cred string, at time.Time, streak uint64) domain.Event {
	return domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanWithheld, At: at,
		ID: "withheld/" + cred + "/gpt-4o/" + strconv.FormatUint(streak, 10),
		Withheld: &domain.Withheld{Credential: cred, Model: "gpt-4o", ErrorCode: 503,
			Rule: "3 x 503 (max_attempts 3, ban permanent)", Reason: "ejection cap 50%", Cap: 50,
			Banned: 1, Pairs: 2, Failures: 3, StreakSeq: streak}}
}

// A withheld ban is counted every time and said at WARN at most once per
// 10 s per model, with how many lines it stands for; a shadow ban counts
// in its own series, at INFO, never as a ban, and shows on /health.
func TestObserveGuards(t *testing.T) {
	r := newRig(t)
	r.publish(outcome("o1", "openai-1", "gpt-4o", 400, t0), outcome("o2", "openai-2", "gpt-4o", 503, t0))
	r.publish(withheldEv("openai-2", t0, 2), withheldEv("openai-2", t0.Add(time.Second), 5),
		withheldEv("openai-2", t0.Add(2*time.Second), 7), withheldEv("openai-2", t0.Add(11*time.Second), 9))
	var warns []logLine
	for _, l := range r.logs.lines(t) {
		if l["@message"] == "Ban withheld: the model is at its ejection cap" {
			warns = append(warns, l)
		}
	}
	if len(warns) != 2 || warns[0]["@level"] != "warn" || warns[1]["withheld_since_last_line"] != float64(2) ||
		warns[0]["rule"] != "3 x 503 (max_attempts 3, ban permanent)" {
		t.Fatalf("withheld lines %v, want two WARN, the second standing for 2 held back", warns)
	}
	until := t0.Add(5 * time.Minute)
	r.publish(domain.Event{V: domain.SchemaVersion, Kind: domain.KindBanShadowed, ID: "shadow/openai-1/gpt-4o/1", At: t0,
		Shadowed: &domain.Ban{Credential: "openai-1", Model: "gpt-4o", Origin: domain.OriginFail2Ban,
			Reason: "2 x 400 (rule 400: max_attempts 2, ban 5m)", ErrorCode: 400, Since: t0, Until: &until, Failures: 2}})
	_, _, m := r.do("GET", "/metrics", "", "")
	for _, want := range []string{
		`airouter_bans_withheld_total{model="gpt-4o"} 4`,
		`airouter_shadow_bans_total{credential="openai-1",error_code="400",model="gpt-4o"} 1`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(m, `auto_ai_router_credential_ban_events_total{`) {
		t.Errorf("a guard counted as a ban:\n%s", m)
	}
	_, h := r.health()
	if mh := h.Models["openai-1:gpt-4o"]; !mh.WouldBan || mh.IsBanned || mh.WouldBanReason != "2 x 400 (rule 400: max_attempts 2, ban 5m)" ||
		mh.WouldBanUntil == nil || !mh.WouldBanUntil.Equal(until) {
		t.Errorf("/health openai-1:gpt-4o = %+v, want its shadow ban and no ban", mh)
	}
}
