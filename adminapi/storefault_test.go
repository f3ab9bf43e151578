package adminapi

import (
	"strings"
	"testing"
)

// A log whose store cannot write makes /health degraded (200) with the
// cause under log.store_fault, and the store gauge 1; without a fault it
// is healthy and the gauge 0.
func TestHealthIsDegradedWhileTheStoreIsFull(t *testing.T) {
	r := newRig(t)
	fault := "store full: insufficient resources"
	r.api.logStatus = func() LogStatus { return LogStatus{Connected: true, StoreFault: fault} }
	h := r.api.Health()
	if h.Status != StatusDegraded || h.Log.StoreFault != fault {
		t.Fatalf("status %q store fault %q, want degraded naming %q", h.Status, h.Log.StoreFault, fault)
	}
	code, _, body := r.do("GET", "/health", "", "")
	if code != 200 || !strings.Contains(body, `"store_fault":"store full: insufficient resources"`) {
		t.Fatalf("/health = %d %s", code, body)
	}
	if _, _, m := r.do("GET", "/metrics", "", ""); !strings.Contains(m, "airouter_log_store_faulted 1") {
		t.Fatal("/metrics lacks airouter_log_store_faulted 1")
	}
	fault = ""
	if h := r.api.Health(); h.Status != StatusHealthy {
		t.Fatalf("status %q without a fault, want healthy", h.Status)
	}
	if _, _, m := r.do("GET", "/metrics", "", ""); !strings.Contains(m, "airouter_log_store_faulted 0") {
		t.Fatal("/metrics lacks airouter_log_store_faulted 0")
	}
}
