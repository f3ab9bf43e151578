package adminapi

import (
	"strings"
	"testing"
)

// /health names the log's server process (its pid, 0 while none serves,
// and its restarts) and /metrics counts the restarts, only when the
// server runs in a process of its own.
func TestHealthNamesTheServerProcess(t *testing.T) {
	r := newRig(t)
	status := LogStatus{Connected: true, ServerProcess: true, ServerPID: 4242, ServerRestarts: 2}
	r.api.logStatus = func() LogStatus { return status }
	_, _, body := r.do("GET", "/health", "", "")
	if !strings.Contains(body, `"server_process":{"pid":4242,"restarts":2}`) {
		t.Fatalf("/health lacks the server process: %s", body)
	}
	if _, _, m := r.do("GET", "/metrics", "", ""); !strings.Contains(m, "airouter_log_server_restarts_total 2") {
		t.Fatal("/metrics lacks airouter_log_server_restarts_total 2")
	}
	status.ServerPID = 0 // between a process's end and the next one's start
	if _, _, body := r.do("GET", "/health", "", ""); !strings.Contains(body, `"server_process":{"pid":0,"restarts":2}`) {
		t.Fatalf("/health while no process serves: %s", body)
	}
	status = LogStatus{Connected: true}
	if _, _, body := r.do("GET", "/health", "", ""); strings.Contains(body, "server_process") {
		t.Fatalf("/health names a server process for an in-process server: %s", body)
	}
	if _, _, m := r.do("GET", "/metrics", "", ""); strings.Contains(m, "airouter_log_server_restarts_total") {
		t.Fatal("/metrics counts server restarts for an in-process server")
	}
}
