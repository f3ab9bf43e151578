package adminapi

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

func TestBanAndUnbanRejectBadRequests(t *testing.T) {
	r := newRig(t)
	big := `{"credential":"openai-1","reason":"` + strings.Repeat("x", 64<<10) + `"}`
	cases := []struct {
		name, path, body string
		status           int
		msg              string // a part of the message
	}{
		{"empty body", "/api/ban", "", 400, "request body required"},
		{"blank body", "/api/ban", " \n\t", 400, "request body required"},
		{"bad JSON", "/api/ban", `{"credential":`, 400, "invalid JSON"},
		{"not an object", "/api/ban", `["openai-1"]`, 400, "invalid JSON"},
		{"unknown field", "/api/ban", `{"credential":"openai-1","ttl_seconds":1800}`, 400, `unknown field "ttl_seconds"`},
		{"two objects", "/api/ban", `{"credential":"openai-1"}{"credential":"openai-2"}`, 400, "unexpected data after the object"},
		{"too large", "/api/ban", big, 413, "larger than 64 KiB"},
		{"no credential", "/api/ban", `{"ttl":"30m"}`, 400, "credential is required"},
		{"blank credential", "/api/ban", `{"credential":"   "}`, 400, "credential is required"},
		{"null body", "/api/ban", `null`, 400, "credential is required"},
		{"zero ttl", "/api/ban", `{"credential":"openai-1","ttl":"0s"}`, 400, `ttl "0s" must be positive`},
		{"negative ttl", "/api/ban", `{"credential":"openai-1","ttl":"-5m"}`, 400, `ttl "-5m" must be positive`},
		{"word ttl", "/api/ban", `{"credential":"openai-1","ttl":"soon"}`, 400, `ttl "soon" is not a Go duration`},
		{"numeric ttl", "/api/ban", `{"credential":"openai-1","ttl":1800}`, 400, "ttl must be a Go duration string"},
		{"empty ttl", "/api/ban", `{"credential":"openai-1","ttl":""}`, 400, "ttl is empty"},
		{"ttl before credential check", "/api/ban", `{"credential":"nope","ttl":"soon"}`, 400, `ttl "soon"`},
		{"unknown credential", "/api/ban", `{"credential":"nope","ttl":"5m"}`, 404, `unknown credential "nope"`},
		{"unban empty body", "/api/unban", "", 400, "request body required"},
		{"unban unknown field", "/api/unban", `{"credential":"openai-1","ttl":"5m"}`, 400, `unknown field "ttl"`},
		{"unban blank credential", "/api/unban", `{"credential":""}`, 400, "credential is required"},
		{"unban unknown credential", "/api/unban", `{"credential":"nope"}`, 404, `unknown credential "nope"`},
		{"unban too large", "/api/unban", big, 413, "larger than 64 KiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, _, body := r.do("POST", c.path, "Bearer "+masterKey, c.body)
			if status != c.status {
				t.Fatalf("status %d, want %d: %s", status, c.status, body)
			}
			if msg := errorMessage(t, body); !strings.Contains(msg, c.msg) {
				t.Errorf("message %q does not say %q", msg, c.msg)
			}
		})
	}
	if got := r.bans(); len(got) != 0 {
		t.Errorf("a rejected request left bans: %v", got)
	}
	if seq := r.live.Load().Seq(); seq != 0 {
		t.Errorf("a rejected request wrote to the log (seq %d)", seq)
	}
}

func TestBanAnswersWithTheBanItMade(t *testing.T) {
	r := newRig(t)
	got := r.admin("POST", "/api/ban", `{"credential":"openai-1","ttl":"30m","reason":"air-scaler drain"}`, 200)
	want := `{"credential":"openai-1","model":"*","origin":"admin","reason":"admin: air-scaler drain",` +
		`"error_code":0,"since":"2026-09-21T16:59:00Z","permanent":false,"until":"2026-09-21T17:29:00Z"}` + "\n"
	if got != want {
		t.Errorf("ban response\n got %s\nwant %s", got, want)
	}
	// The answer comes after the event is applied: the list and the
	// routing view already hold it, with no wait.
	if bans := r.bans(); len(bans) != 1 || bans[0]["model"] != "*" {
		t.Fatalf("bans right after the answer: %v", bans)
	}
	if b, ok := r.live.Load().Blocked("openai-1", "gpt-4o", r.clock.Now()); !ok || b.Reason != domain.BlockBanned {
		t.Errorf("routing does not see the ban: %+v %v", b, ok)
	}

	got = r.admin("POST", "/api/ban", `{"credential":"openai-2","model":"gpt-4o"}`, 200)
	want = `{"credential":"openai-2","model":"gpt-4o","origin":"admin","reason":"admin",` +
		`"error_code":0,"since":"2026-09-21T16:59:00Z","permanent":true}` + "\n"
	if got != want {
		t.Errorf("permanent ban response\n got %s\nwant %s", got, want)
	}
	if b, ok := r.live.Load().Blocked("openai-2", "gpt-4o", r.clock.Now().Add(1000*time.Hour)); !ok || !b.Permanent {
		t.Errorf("a ban without ttl is not permanent: %+v", b)
	}
	if _, ok := r.live.Load().Blocked("openai-2", "gpt-4o-mini", r.clock.Now()); ok {
		t.Error("a per-model ban blocks another model")
	}
}

func TestBanReasonIsNormalised(t *testing.T) {
	r := newRig(t)
	cases := []struct{ in, want string }{
		{`""`, "admin"},
		{`"   "`, "admin"},
		{`"drain"`, "admin: drain"},
		{`"  key rotation \n"`, "admin: key rotation"},
		{`"admin: already prefixed"`, "admin: already prefixed"},
		{`"admin:tight"`, "admin:tight"},
		{`"admin"`, "admin: admin"},
		{`"rotating ` + clientKey + `"`, "admin: rotating [redacted-key]"},
	}
	for _, c := range cases {
		body := r.admin("POST", "/api/ban", `{"credential":"claude-1","ttl":"1h","reason":`+c.in+`}`, 200)
		var v struct{ Reason string }
		decode(t, body, &v)
		if v.Reason != c.want {
			t.Errorf("reason %s stored as %q, want %q", c.in, v.Reason, c.want)
		}
		if bans := r.bans(); len(bans) != 1 || bans[0]["reason"] != c.want {
			t.Errorf("reason %s listed as %v", c.in, bans)
		}
	}
	if strings.Contains(r.logs.String(), clientKey) {
		t.Error("a key in a reason reached the log")
	}
}

func TestUnbanLiftsWhatItNamesAndCountsActiveBans(t *testing.T) {
	r := newRig(t)
	setup := func() {
		r.admin("POST", "/api/ban", `{"credential":"openai-1","ttl":"30m"}`, 200)
		r.admin("POST", "/api/ban", `{"credential":"openai-1","model":"gpt-4o"}`, 200)
		r.failures("openai-1", "gpt-4o-mini", 429, 3, time.Hour)
		r.admin("POST", "/api/ban", `{"credential":"openai-2","model":"gpt-4o","ttl":"5m"}`, 200)
	}
	setup()
	if n := len(r.bans()); n != 4 {
		t.Fatalf("%d bans after setup, want 4", n)
	}

	// An exact model lifts that key only; the wildcard stays.
	if got := r.admin("POST", "/api/unban", `{"credential":"openai-1","model":"gpt-4o"}`, 200); got != `{"credential":"openai-1","model":"gpt-4o","removed":1}`+"\n" {
		t.Errorf("unban one model: %s", got)
	}
	if b, ok := r.live.Load().Blocked("openai-1", "gpt-4o", r.clock.Now()); !ok || b.Reason != domain.BlockBanned {
		t.Error("unbanning a model lifted the credential-wide ban")
	}
	// "*" lifts the wildcard only.
	if got := r.admin("POST", "/api/unban", `{"credential":"openai-1","model":"*"}`, 200); got != `{"credential":"openai-1","model":"*","removed":1}`+"\n" {
		t.Errorf("unban the wildcard: %s", got)
	}
	if _, ok := r.live.Load().Blocked("openai-1", "gpt-4o-mini", r.clock.Now()); !ok {
		t.Error("unbanning the wildcard lifted a per-model automatic ban")
	}
	// Idempotent.
	if got := r.admin("POST", "/api/unban", `{"credential":"openai-1","model":"*"}`, 200); got != `{"credential":"openai-1","model":"*","removed":0}`+"\n" {
		t.Errorf("unban again: %s", got)
	}

	// Without a model: everything of the credential, manual and automatic.
	setup()
	if got := r.admin("POST", "/api/unban", `{"credential":"openai-1"}`, 200); got != `{"credential":"openai-1","model":"","removed":3}`+"\n" {
		t.Errorf("unban the credential: %s", got)
	}
	bans := r.bans()
	if len(bans) != 1 || bans[0]["credential"] != "openai-2" {
		t.Errorf("bans left: %v", bans)
	}
	if got := r.admin("POST", "/api/unban", `{"credential":"openai-1"}`, 200); !strings.Contains(got, `"removed":0`) {
		t.Errorf("unban twice: %s", got)
	}

	// An expired ban is not counted.
	r.clock.Advance(6 * time.Minute)
	if got := r.admin("POST", "/api/unban", `{"credential":"openai-2","model":"gpt-4o"}`, 200); !strings.Contains(got, `"removed":0`) {
		t.Errorf("an expired ban counted: %s", got)
	}
}

func TestBansListsActiveBansSorted(t *testing.T) {
	r := newRig(t)
	if got := r.admin("GET", "/api/bans", "", 200); got != `{"bans":[]}`+"\n" {
		t.Errorf("empty list: %q", got)
	}
	r.admin("POST", "/api/ban", `{"credential":"relay","ttl":"2m"}`, 200)
	r.admin("POST", "/api/ban", `{"credential":"openai-2","model":"gpt-4o","ttl":"1h"}`, 200)
	r.failures("openai-1", "gpt-4o", 429, 3, 5*time.Minute)
	r.admin("POST", "/api/ban", `{"credential":"openai-2","ttl":"1h"}`, 200)
	r.admin("POST", "/api/ban", `{"credential":"claude-1","model":"claude-sonnet"}`, 200)

	keys := func() []string {
		var out []string
		for _, b := range r.bans() {
			out = append(out, fmt.Sprintf("%s/%s/%s", b["credential"], b["model"], b["origin"]))
		}
		return out
	}
	want := "claude-1/claude-sonnet/admin openai-1/gpt-4o/fail2ban openai-2/*/admin openai-2/gpt-4o/admin relay/*/admin"
	if got := strings.Join(keys(), " "); got != want {
		t.Errorf("order\n got %s\nwant %s", got, want)
	}
	auto := r.bans()[1]
	if auto["error_code"] != float64(429) || auto["until"] != "2026-09-21T17:04:00Z" || auto["permanent"] != false {
		t.Errorf("automatic ban item: %v", auto)
	}
	// Expired bans drop out of the list without any event.
	r.clock.Advance(3 * time.Minute)
	want = "claude-1/claude-sonnet/admin openai-1/gpt-4o/fail2ban openai-2/*/admin openai-2/gpt-4o/admin"
	if got := strings.Join(keys(), " "); got != want {
		t.Errorf("after 3m\n got %s\nwant %s", got, want)
	}
}

func TestManualBanReplacesAnAutomaticOne(t *testing.T) {
	r := newRig(t)
	r.failures("openai-1", "gpt-4o", 429, 3, 24*time.Hour)
	bans := r.bans()
	if len(bans) != 1 || bans[0]["origin"] != "fail2ban" {
		t.Fatalf("automatic ban: %v", bans)
	}
	// A shorter manual ban replaces the longer automatic one; no unban
	// first.
	r.admin("POST", "/api/ban", `{"credential":"openai-1","model":"gpt-4o","ttl":"10m","reason":"checking the key"}`, 200)
	bans = r.bans()
	if len(bans) != 1 || bans[0]["origin"] != "admin" || bans[0]["until"] != "2026-09-21T17:09:00Z" || bans[0]["error_code"] != float64(0) {
		t.Fatalf("after the manual ban: %v", bans)
	}
	// Counters are untouched.
	_, h := r.health()
	if m := h.Models["openai-1:gpt-4o"]; m.ErrorCodeCounts["429"] != 3 || m.BanOrigin != domain.OriginAdmin {
		t.Errorf("pair after the manual ban: %+v", m)
	}
	// The manual ban ends when it says, not when the automatic one would.
	r.clock.Advance(11 * time.Minute)
	if _, ok := r.live.Load().Blocked("openai-1", "gpt-4o", r.clock.Now()); ok {
		t.Error("the automatic ban outlived the manual ban that replaced it")
	}
}

func TestWildcardBanCoversAModelLearnedLater(t *testing.T) {
	r := newRig(t)
	r.admin("POST", "/api/ban", `{"credential":"relay","ttl":"30m","reason":"upstream maintenance"}`, 200)
	r.learn(Pair{Credential: "relay", Model: "llama-3-70b"})

	if b, ok := r.live.Load().Blocked("relay", "llama-3-70b", r.clock.Now()); !ok || b.Reason != domain.BlockBanned {
		t.Errorf("the learned model is routable: %+v", b)
	}
	_, h := r.health()
	m, ok := h.Models["relay:llama-3-70b"]
	if !ok {
		t.Fatalf("the learned model is not in /health: %v", h.Models)
	}
	if !m.IsBanned || m.BanOrigin != domain.OriginAdmin || m.BanReason != "admin: upstream maintenance" || m.BanUntil == nil {
		t.Errorf("learned model: %+v", m)
	}
	if bans := r.bans(); len(bans) != 1 {
		t.Errorf("the wildcard ban was enumerated: %v", bans)
	}
}

// TestGracefulScaleIn drains a credential as an autoscaler does before
// removing its replica, at the API level: ban the credential, routing
// stops choosing it (a request already
// forwarded is untouched: a ban only changes what the next selection
// sees), then unban brings it back.
func TestGracefulScaleIn(t *testing.T) {
	r := newRig(t)
	now := r.clock.Now
	r.admin("POST", "/api/ban", `{"credential":"openai-2","ttl":"30m","reason":"air-scaler drain"}`, 200)
	bans := r.bans()
	if len(bans) != 1 || bans[0]["credential"] != "openai-2" || bans[0]["reason"] != "admin: air-scaler drain" {
		t.Fatalf("bans: %v", bans)
	}
	snap := r.live.Load()
	if _, ok := snap.Blocked("openai-2", "gpt-4o", now()); !ok {
		t.Fatal("new requests may still pick the drained credential")
	}
	if _, ok := snap.Blocked("openai-1", "gpt-4o", now()); ok {
		t.Fatal("the drain blocked another credential")
	}
	status, h := r.health()
	if status != 200 || !h.Credentials["openai-2"].IsBanned || h.CredentialsAvailable != 3 {
		t.Errorf("health during the drain: %d %+v", status, h.Credentials["openai-2"])
	}
	// An attempt that was in flight finishes and is recorded; the ban
	// ignores it rather than failing it.
	r.publish(outcome("in-flight", "openai-2", "gpt-4o", 200, now()))

	r.clock.Advance(5 * time.Minute)
	r.admin("POST", "/api/unban", `{"credential":"openai-2"}`, 200)
	if bans := r.bans(); len(bans) != 0 {
		t.Fatalf("bans after unban: %v", bans)
	}
	if _, ok := r.live.Load().Blocked("openai-2", "gpt-4o", now()); ok {
		t.Error("the unbanned credential is still blocked")
	}
	if _, h := r.health(); h.Credentials["openai-2"].IsBanned || h.CredentialsAvailable != 4 {
		t.Errorf("health after unban: %+v", h.Credentials["openai-2"])
	}
}

func TestChangesAnswer503WhenTheLogCannotTakeThem(t *testing.T) {
	r := newRig(t)
	r.admin("POST", "/api/ban", `{"credential":"openai-1","ttl":"30m"}`, 200)
	before := r.admin("GET", "/api/bans", "", 200)
	if err := r.log.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, body string }{
		{"/api/ban", `{"credential":"openai-2","ttl":"30m"}`},
		{"/api/unban", `{"credential":"openai-1"}`},
	} {
		status, _, body := r.do("POST", c.path, "Bearer "+masterKey, c.body)
		if status != 503 {
			t.Fatalf("%s with the log closed: %d %s", c.path, status, body)
		}
		msg := errorMessage(t, body)
		if !strings.Contains(msg, "nothing changed") || !strings.Contains(msg, "event log did not take it") ||
			!strings.Contains(strings.ToLower(msg), "closed") {
			t.Errorf("%s: the message does not name the cause: %q", c.path, msg)
		}
	}
	if after := r.admin("GET", "/api/bans", "", 200); after != before {
		t.Errorf("a failed change was half-applied:\nbefore %s\nafter  %s", before, after)
	}
	if !strings.Contains(r.logs.String(), "admin change not recorded") {
		t.Error("the failure was not logged")
	}
}
