package main

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airouter/airouter/domain"
	"github.com/airouter/airouter/internal/testkit"
)

type storeDoc struct {
	Status string `json:"status"`
	Log    struct {
		Connected  bool   `json:"connected"`
		StoreFault string `json:"store_fault"`
	} `json:"log"`
}

func storeHealth(t *testing.T, r *running) (int, storeDoc) {
	t.Helper()
	code, body, _ := health(t, r)
	var d storeDoc
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	return code, d
}

// With the embedded store on a full filesystem, /health is 200 "degraded"
// naming the cause, the store metric is 1, and an admin ban is refused;
// once space is freed the log writes again by itself: the outcomes held
// meanwhile are stored and Fail2Ban bans on them, admin bans work, and
// every outcome acknowledged is in the log.
func TestFullStoreIsDegradedAndRecovers(t *testing.T) {
	fs := testkit.SmallFS(t, 32<<20)
	upA, upB := newUpstream(t, 200), newUpstream(t, 200)
	r := start(t, testConfig(t, filepath.Join(fs, "store"), "file", tenStrikes, upA, upB))
	ctx := testkit.Context(t)
	for range 4 {
		if code, _, body := chat(t, r); code != http.StatusOK {
			t.Fatalf("chat: %d %s", code, body)
		}
	}
	if err := r.log.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before := r.log.Stats().Published
	// What /health says with a store that writes; it says so again once
	// space is freed.
	_, base := storeHealth(t, r)
	if base.Status == "unhealthy" || !base.Log.Connected || base.Log.StoreFault != "" {
		t.Fatalf("/health before the disk filled: %+v", base)
	}
	ban := func(cred string) int {
		code, _, _ := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": cred, "model": "gpt-test", "ttl": "1m"})
		return code
	}

	free := testkit.FillFS(t, fs)
	testkit.Eventually(t, "/health degraded by the full store", func() bool {
		chat(t, r) // the write that finds the disk full
		code, d := storeHealth(t, r)
		return code == http.StatusOK && d.Status == "degraded" && strings.HasPrefix(d.Log.StoreFault, "store full: ")
	})
	if _, _, m := r.do(t, "GET", "/metrics", "", nil); !strings.Contains(string(m), "airouter_log_store_faulted 1") {
		t.Error("/metrics does not show airouter_log_store_faulted 1 while the store is full")
	}
	if code := ban("cred-b"); code != http.StatusServiceUnavailable {
		t.Fatalf("admin ban while the store is full: %d, want 503", code)
	}
	upA.status.Store(500)
	for from := upA.calls.Load(); upA.calls.Load() < from+12; { // ten 500s and more from cred-a, held
		if code, _, body := chat(t, r); code != http.StatusOK {
			t.Fatalf("chat while the store is full: %d %s, want cred-b's 200", code, body)
		}
	}
	if blocked(r, "cred-a", "gpt-test") {
		t.Fatal("banned while the outcomes could not be stored")
	}

	free()
	testkit.Eventually(t, "/health as before once space is freed", func() bool {
		code, d := storeHealth(t, r)
		return code == http.StatusOK && d == base
	})
	testkit.Eventually(t, "Fail2Ban bans cred-a on the held outcomes", func() bool { return blocked(r, "cred-a", "gpt-test") })
	if _, _, m := r.do(t, "GET", "/metrics", "", nil); !strings.Contains(string(m), "airouter_log_store_faulted 0") {
		t.Error("/metrics does not show airouter_log_store_faulted 0 after recovery")
	}
	if code := ban("cred-b"); code != http.StatusOK {
		t.Fatalf("admin ban after space was freed: %d", code)
	}
	fctx, cancel := context.WithTimeout(ctx, testkit.Wait)
	defer cancel()
	if err := r.log.Flush(fctx); err != nil {
		t.Fatal(err)
	}
	s := r.log.Stats()
	stored := countEvents(t, r, func(ev domain.Event) bool { return ev.Kind == domain.KindOutcomeRecorded })
	if uint64(stored) != s.Published || s.Published < before+12 {
		t.Fatalf("the log holds %d outcomes; %d acknowledged (%d before the disk filled), want all of them and the held ones",
			stored, s.Published, before)
	}
}
