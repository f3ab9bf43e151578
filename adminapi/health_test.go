package adminapi

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airouter/airouter/domain"
)

var update = flag.Bool("update", false, "rewrite testdata/adminapi/*.golden.json")

const goldenDir = "../testdata/adminapi"

// mixedPool brings the test pool to a state with every kind of ban:
//
//   - openai-1: three 429s and an automatic ban on gpt-4o-mini, then an
//     admin ban of the whole credential for 30m;
//   - openai-2: a 500 and two 400s on gpt-4o (400 is not watched) and a
//     cooldown on it; no ban;
//   - claude-1: a permanent automatic ban on claude-sonnet after 401s;
//   - relay: nothing; and gpt-4o-mini benched everywhere for 10m.
func mixedPool(r *rig) {
	at := r.clock.Now()
	r.failures("openai-1", "gpt-4o-mini", 429, 3, time.Hour)
	r.admin("POST", "/api/ban", `{"credential":"openai-1","ttl":"30m","reason":"air-scaler drain"}`, 200)
	r.publish(
		outcome("o2-1", "openai-2", "gpt-4o", 500, at),
		outcome("o2-2", "openai-2", "gpt-4o", 400, at),
		outcome("o2-3", "openai-2", "gpt-4o", 400, at),
		domain.Event{V: 1, Kind: domain.KindCooldownStarted, ID: "cooldown/openai-2/gpt-4o/9", At: at,
			Cooldown: &domain.Cooldown{Credential: "openai-2", Model: "gpt-4o", Until: at.Add(2 * time.Minute), Status: 429, CauseSeq: 9}},
	)
	r.failures("claude-1", "claude-sonnet", 401, 3, 0)
	r.publish(domain.Event{V: 1, Kind: domain.KindModelBenched, ID: "bench/gpt-4o-mini/20", At: at,
		Bench: &domain.Bench{Model: "gpt-4o-mini", Until: at.Add(10 * time.Minute), Failures: 4,
			Credentials: []string{"openai-1", "openai-2"}, Reason: "4 failures on 2 credentials within 1m (last: 503)", CauseSeq: 20}})
}

// allBannedPool is mixedPool with every pair banned: /health is 503.
func allBannedPool(r *rig) {
	mixedPool(r)
	r.admin("POST", "/api/ban", `{"credential":"openai-2","model":"gpt-4o","ttl":"1h"}`, 200)
	r.admin("POST", "/api/ban", `{"credential":"relay"}`, 200)
}

func TestHealthGolden(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(r *rig)
		status int
	}{
		{"fresh", func(*rig) {}, 200},
		{"mixed", mixedPool, 200},
		{"all-banned", allBannedPool, 503},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t)
			c.setup(r)
			status, h, body := r.do("GET", "/health", "", "")
			if status != c.status {
				t.Errorf("status %d, want %d", status, c.status)
			}
			if h.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q", h.Get("Content-Type"))
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, []byte(body), "", "  "); err != nil {
				t.Fatalf("indent %s: %v", body, err)
			}
			compareGolden(t, filepath.Join(goldenDir, "health-"+c.name+".golden.json"), pretty.Bytes())
		})
	}
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./adminapi -run %s -update)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got %s\nwant %s", path, got, want)
	}
}

func TestHealthExplainsBans(t *testing.T) {
	r := newRig(t)
	mixedPool(r)
	status, h := r.health()
	if status != 200 || h.Status != "healthy" {
		t.Fatalf("status %d %q", status, h.Status)
	}
	if h.TotalCredentials != 4 || h.CredentialsAvailable != 2 || h.BannedPairs != 3 {
		t.Errorf("counts: total %d available %d banned %d; want 4, 2 and 3 (banned counts pairs)",
			h.TotalCredentials, h.CredentialsAvailable, h.BannedPairs)
	}
	// The credential reports its manual ban over its automatic one.
	o1 := h.Credentials["openai-1"]
	if !o1.IsBanned || o1.BanOrigin != domain.OriginAdmin || o1.BanReason != "admin: air-scaler drain" ||
		o1.BanUntil == nil || !o1.BanUntil.Equal(t0.Add(30*time.Minute)) {
		t.Errorf("openai-1: %+v", o1)
	}
	if o1.BannedErrorCounts["429"] != 3 {
		t.Errorf("openai-1 banned error counts: %v", o1.BannedErrorCounts)
	}
	// The wildcard marks every model; a model's own ban is the one shown.
	if m := h.Models["openai-1:gpt-4o"]; !m.IsBanned || m.BanOrigin != domain.OriginAdmin {
		t.Errorf("openai-1:gpt-4o: %+v", m)
	}
	if m := h.Models["openai-1:gpt-4o-mini"]; !m.IsBanned || m.BanOrigin != domain.OriginFail2Ban || m.ErrorCodeCounts["429"] != 3 {
		t.Errorf("openai-1:gpt-4o-mini: %+v", m)
	}
	// Unwatched codes are not shown; cooldowns are.
	m := h.Models["openai-2:gpt-4o"]
	if m.IsBanned || len(m.ErrorCodeCounts) != 1 || m.ErrorCodeCounts["500"] != 1 || m.CooldownUntil == nil {
		t.Errorf("openai-2:gpt-4o: %+v", m)
	}
	// A permanent ban has no until.
	if c := h.Credentials["claude-1"]; !c.IsBanned || c.BanUntil != nil || c.BanOrigin != domain.OriginFail2Ban {
		t.Errorf("claude-1: %+v", c)
	}
	if _, ok := h.BenchedModels["gpt-4o-mini"]; !ok {
		t.Errorf("benched models: %v", h.BenchedModels)
	}
	if h.Log.AppliedSeq == 0 || h.Log.Lag != 0 || h.Log.LastSeq != h.Log.AppliedSeq || !h.Log.Connected {
		t.Errorf("log: %+v", h.Log)
	}
	// Weights: model weight, else credential weight, else 1.
	if h.Models["openai-2:gpt-4o"].Weight != 5 || h.Credentials["openai-2"].Weight != 2 || h.Models["relay:gpt-4o"].Weight != 1 {
		t.Error("effective weights are wrong")
	}

	// When the admin ban ends, the automatic one is reported again.
	r.clock.Advance(31 * time.Minute)
	_, h = r.health()
	if c := h.Credentials["openai-1"]; c.BanOrigin != domain.OriginFail2Ban || !c.BanUntil.Equal(t0.Add(time.Hour)) {
		t.Errorf("openai-1 after the admin ban ended: %+v", c)
	}
	if m := h.Models["openai-1:gpt-4o"]; m.IsBanned {
		t.Errorf("openai-1:gpt-4o still banned: %+v", m)
	}
}

func TestHealthReportsTheLongestAutomaticBan(t *testing.T) {
	r := newRig(t)
	r.failures("openai-2", "gpt-4o", 429, 3, 5*time.Minute)
	r.failures("openai-2", "gpt-4o-mini", 503, 3, time.Hour)
	r.failures("openai-2", "o1", 500, 3, 20*time.Minute)
	_, h := r.health()
	c := h.Credentials["openai-2"]
	if c.BanUntil == nil || !c.BanUntil.Equal(t0.Add(time.Hour)) || c.BanReason == "" {
		t.Errorf("credential: %+v", c)
	}
	if c.BannedErrorCounts["429"] != 3 || c.BannedErrorCounts["503"] != 3 || c.BannedErrorCounts["500"] != 3 {
		t.Errorf("banned error counts are not summed over banned pairs: %v", c.BannedErrorCounts)
	}
	// A pair the log names but config does not is still listed.
	if _, ok := h.Models["openai-2:o1"]; !ok {
		t.Error("a pair known only from the log is missing")
	}
}

// credentials_available counts only credentials without any ban; /health
// turns 503 only when no credential is usable, so
// a pool where every credential lost one model still reports healthy.
func TestHealthStaysHealthyWhileAnyPairRoutes(t *testing.T) {
	r := newRig(t)
	for _, b := range []string{
		`{"credential":"openai-1","model":"gpt-4o"}`,
		`{"credential":"openai-2","model":"gpt-4o"}`,
		`{"credential":"claude-1","model":"claude-sonnet"}`,
		`{"credential":"relay","model":"gpt-4o"}`,
	} {
		r.admin("POST", "/api/ban", b, 200)
	}
	status, h := r.health()
	if status != 200 || h.Status != "healthy" || h.CredentialsAvailable != 0 {
		t.Fatalf("status %d %q, available %d; openai-1/gpt-4o-mini still routes", status, h.Status, h.CredentialsAvailable)
	}
	r.admin("POST", "/api/ban", `{"credential":"openai-1","model":"gpt-4o-mini"}`, 200)
	if status, h := r.health(); status != 503 || h.Status != "unhealthy" {
		t.Fatalf("with every pair banned: status %d %q", status, h.Status)
	}
}
