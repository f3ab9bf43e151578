package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
)

// freeListen returns a loopback address with a port free right now.
func freeListen(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// `tail -config FILE -bans` finds the running router's log through
// events.listen and prints bans and unbans as they happen, and nothing else.
func TestTailFollowsBansThroughTheConfig(t *testing.T) {
	up := newUpstream(t, 200)
	path, cfg := replayConfig(t, eventsAt(tempStore(t), "file", freeListen(t)), "", up)
	r := start(t, cfg)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb testkit.Buffer
	done := make(chan error, 1)
	go func() { done <- dispatch(ctx, []string{"tail", "-config", path, "-bans"}, &out, &errb) }()
	testkit.Eventually(t, "tail to follow", func() bool { return strings.Contains(errb.String(), "following events.listen") })

	if status, _, body := chat(t, r); status != 200 {
		t.Fatalf("chat: %d %s", status, body)
	}
	if status, _, body := r.do(t, "POST", "/api/ban", testMasterKey, map[string]any{"credential": "cred-a", "model": "gpt-test", "reason": "air-scaler drain"}); status != 200 {
		t.Fatalf("/api/ban = %d %s", status, body)
	}
	if status, _, body := r.do(t, "POST", "/api/unban", testMasterKey, map[string]any{"credential": "cred-a"}); status != 200 {
		t.Fatalf("/api/unban = %d %s", status, body)
	}
	testkit.Eventually(t, "tail to print the ban and the unban", func() bool {
		return strings.Contains(out.String(), "unbanned (admin)")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("tail: %v\n%s", err, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[0], "  cred-a  gpt-test  banned (admin) air-scaler drain, permanent") ||
		!strings.HasSuffix(lines[1], "  cred-a  *  unbanned (admin), every ban of the credential") {
		t.Fatalf("tail printed:\n%s", out.String())
	}

	// replay -config reads the same running log through events.listen.
	timeline, stderr, err := runCmd(t, "replay", "-config", path, "-kind", "ban")
	if err != nil || !strings.Contains(timeline, "banned (admin) air-scaler drain") {
		t.Fatalf("replay: %v\n%s%s", err, timeline, stderr)
	}
}

// A log that only lives in a router's memory, or that is embedded with no
// listener, is refused with a message saying what to set.
func TestLogSubcommandsSayWhereTheLogIsNot(t *testing.T) {
	up := newUpstream(t, 200)
	memPath, _ := replayConfig(t, eventsAt(tempStore(t), "memory", ""), "", up)
	if _, _, err := runCmd(t, "replay", "-config", memPath); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("replay of a memory log: %v", err)
	}
	filePath, _ := replayConfig(t, eventsAt(tempStore(t), "file", ""), "", up)
	if _, _, err := runCmd(t, "tail", "-config", filePath); err == nil || !strings.Contains(err.Error(), "events.listen") {
		t.Errorf("tail of an embedded log without a listener: %v", err)
	}
	if _, _, err := runCmd(t, "replay", "-config", filePath); err == nil || !strings.Contains(err.Error(), "jetstream") {
		t.Errorf("replay of a store that was never written: %v", err)
	}
}
