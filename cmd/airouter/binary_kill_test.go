package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/airouter/airouter/internal/testkit"
)

// The SIGKILL test bans pairs of killCreds credentials and killModels
// models (every credential serves every model); the proxy traffic asks for
// killLive, which is never banned.
const (
	killCreds  = 10
	killModels = 20
	killLive   = "gpt-live"
	// killCkpt bans are made before a clean stop, so the checkpoint holds
	// them; killAcks more are acknowledged after the restart before the
	// SIGKILL (the bans in flight then go on until the process is gone).
	killCkpt = 20
	killAcks = 100
)

// pair is a credential and model a ban is on.
type pair struct{ cred, model string }

// killPairs is every pair the test may ban, in ban order.
func killPairs() []pair {
	var ps []pair
	for m := range killModels {
		for c := range killCreds {
			ps = append(ps, pair{fmt.Sprintf("cred-%c", 'a'+c), fmt.Sprintf("m%02d", m)})
		}
	}
	return ps
}

// killConfig writes a serve config on a free port with an embedded file
// store in store, every credential on u, and returns its path and port.
func killConfig(t *testing.T, store string, u *upstream) (string, int) {
	t.Helper()
	port := freePorts(t, 1)[0]
	var b strings.Builder
	fmt.Fprintf(&b, "server:\n  port: %d\n  master_key: %s\n  shutdown_delay: 0s\n", port, testMasterKey)
	fmt.Fprintf(&b, "events:\n  store_dir: %s\n  storage: file\ncredentials:\n", store)
	for c := range killCreds {
		fmt.Fprintf(&b, "  - name: cred-%c\n    type: openai\n    api_key: sk-upstream-secret-%d\n    base_url: %s/v1\n", 'a'+c, c, u.URL)
	}
	fmt.Fprintf(&b, "models:\n  - name: %s\n", killLive)
	for m := range killModels {
		fmt.Fprintf(&b, "  - name: m%02d\n", m)
	}
	path := filepath.Join(t.TempDir(), "airouter.yaml")
	writeFile(t, path, b.String())
	return path, port
}

// ban bans pr for an hour.
func (p *serveProc) ban(pr pair) (int, []byte, error) {
	return p.send("POST", "/api/ban", map[string]string{"credential": pr.cred, "model": pr.model, "ttl": "1h", "reason": "sigkill test"})
}

// bans is the set of pairs /api/bans lists.
func (p *serveProc) bans(t *testing.T) map[pair]bool {
	t.Helper()
	st, body, err := p.send("GET", "/api/bans", nil)
	var resp struct {
		Bans []struct{ Credential, Model string }
	}
	if err != nil || st != http.StatusOK || json.Unmarshal(body, &resp) != nil {
		t.Fatalf("/api/bans: %d %v %s", st, err, body)
	}
	out := map[pair]bool{}
	for _, b := range resp.Bans {
		out[pair{b.Credential, b.Model}] = true
	}
	return out
}

// killed is what the SIGKILL cut short: the bans acknowledged (2xx)
// before it, the bans asked for, and the proxy requests answered 200.
type killed struct {
	acked, asked map[pair]bool
	served       int64
}

// banUntilKilled bans pairs from four clients while three others send
// chat requests for killLive, and sends p SIGKILL, by its PID, once
// killAcks bans are acknowledged. Every loop is bounded by its count and
// ends at its first failed request (the process is gone).
func banUntilKilled(t *testing.T, p *serveProc, pairs []pair) killed {
	t.Helper()
	var (
		mu     sync.Mutex
		k      = killed{acked: map[pair]bool{}, asked: map[pair]bool{}}
		next   atomic.Int64
		served atomic.Int64
		wg     sync.WaitGroup
		enough = make(chan struct{})
		once   sync.Once
	)
	for range 3 {
		wg.Go(func() {
			for range 5000 {
				st, _, err := p.send("POST", "/v1/chat/completions", map[string]any{
					"model": killLive, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
				if err != nil {
					return
				}
				if st == http.StatusOK {
					served.Add(1)
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(pairs)); i = next.Add(1) - 1 {
				mu.Lock()
				k.asked[pairs[i]] = true
				mu.Unlock()
				st, _, err := p.ban(pairs[i])
				if err != nil {
					return
				}
				mu.Lock()
				if st == http.StatusOK {
					k.acked[pairs[i]] = true
				}
				if len(k.acked) >= killAcks {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			}
		})
	}
	testkit.Receive(t, fmt.Sprintf("%d bans acknowledged under proxy traffic", killAcks), enough)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("after SIGKILL the process exited with %v", err)
	}
	wg.Wait()
	k.served = served.Load()
	return k
}

// garbleTail overwrites the events stream's newest block file in store
// with garbage (0xA5 bytes) from a record two thirds in to its end, as a
// torn write leaves it.
func garbleTail(t *testing.T, store string) {
	t.Helper()
	path := newestBlock(t, store)
	b, starts := testkit.BlockRecords(t, path)
	if len(starts) < 4 {
		t.Fatalf("%s holds %d records", path, len(starts))
	}
	for i := starts[len(starts)*2/3]; i < len(b); i++ {
		b[i] = 0xA5
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// testKilledStore runs the built binary as an operator's router: bans,
// a clean stop (its checkpoint holds them), a restart, many more bans
// under proxy traffic, and a real SIGKILL. The store the killed process
// left is then damaged, its newest events block truncated or garbage in
// its tail, and on it `export` ends with an error naming the loss, and
// serve is ready within serveReady with every acknowledged ban, or reports
// the loss (the ERROR line, /health degraded with the count, the gauge)
// and keeps every ban of the checkpoint.
func testKilledStore(t *testing.T, bin string) {
	up := newUpstream(t, 200)
	store := tempStore(t)
	pairs := killPairs()
	cfgPath, port := killConfig(t, store, up)
	p := startServe(t, bin, cfgPath, port)
	for _, pr := range pairs[:killCkpt] {
		if st, body, err := p.ban(pr); err != nil || st != http.StatusOK {
			t.Fatalf("ban %v: %d %v %s", pr, st, err, body)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := p.wait(t); err != nil {
		t.Fatalf("the clean stop exited with %v", err)
	}

	cfgPath, port = killConfig(t, store, up)
	p = startServe(t, bin, cfgPath, port)
	k := banUntilKilled(t, p, pairs[killCkpt:])
	if k.served == 0 {
		t.Fatal("no proxy request was served while the bans were made")
	}
	for _, pr := range pairs[:killCkpt] {
		k.acked[pr], k.asked[pr] = true, true
	}
	t.Logf("SIGKILL after %d bans acknowledged (%d asked) and %d proxy requests served", len(k.acked), len(k.asked), k.served)

	for _, c := range []struct {
		name   string
		damage func(*testing.T, string)
	}{{"truncated", truncateNewestBlock}, {"garbage", garbleTail}} {
		t.Run(c.name, func(t *testing.T) {
			routerStore, exportStore := tempStore(t), tempStore(t)
			testkit.CopyDir(t, store, routerStore)
			testkit.CopyDir(t, store, exportStore)
			c.damage(t, routerStore)
			c.damage(t, exportStore)
			cfgPath, _ := killConfig(t, exportStore, up)
			exportFails(t, bin, cfgPath)
			cfgPath, port := killConfig(t, routerStore, up)
			restartKeeps(t, startServe(t, bin, cfgPath, port), pairs[:killCkpt], k)
		})
	}
}

// exportFails runs `export` on cfgPath's damaged store and checks that it
// ends, within serveReady, with an error naming the loss.
func exportFails(t *testing.T, bin, cfgPath string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testkit.Context(t), serveReady)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "export", "-config", cfgPath)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("export on the damaged store did not end within %s: %s", serveReady, stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(stderr.String(), "lost") || !strings.Contains(stderr.String(), "from sequence") {
		t.Fatalf("export on the damaged store: %v, stderr %q; want a failure naming the loss", err, stderr.String())
	}
}

// restartKeeps checks what p, started on a damaged store, kept against
// what the killed process acknowledged.
func restartKeeps(t *testing.T, p *serveProc, ckpt []pair, k killed) {
	t.Helper()
	kept := p.bans(t)
	for pr := range kept {
		if !k.asked[pr] {
			t.Errorf("a ban on %v that was never asked for", pr)
		}
	}
	for _, pr := range ckpt {
		if !kept[pr] {
			t.Errorf("the checkpoint's ban on %v is gone", pr)
		}
	}
	var lost int
	for pr := range k.acked {
		if !kept[pr] {
			lost++
		}
	}
	if lost == 0 {
		t.Logf("kept every one of the %d acknowledged bans", len(k.acked))
	} else {
		lh := lossReported(t, &running{url: p.url}, p.logs)
		if uint64(lost) > lh.MissingEvents {
			t.Errorf("%d acknowledged bans lost, only %d events reported missing", lost, lh.MissingEvents)
		}
		t.Logf("kept %d bans, %d acknowledged ones lost; reported %d events missing from seq %d",
			len(kept), lost, lh.MissingEvents, lh.MissingFromSeq)
	}
	// The damaged log takes new events.
	if st, body, err := p.ban(pair{"cred-a", killLive}); err != nil || st != http.StatusOK {
		t.Fatalf("a ban after the restart: %d %v %s", st, err, body)
	}
}
