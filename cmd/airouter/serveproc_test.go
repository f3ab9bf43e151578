package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/airouter/airouter/internal/testkit"
)

// serveReady bounds a serve child's start (the replay of a damaged store
// included) and a tool's run on a damaged store.
const serveReady = 30 * time.Second

// serveProc is an `airouter serve` child process with its log.
type serveProc struct {
	url    string
	cmd    *exec.Cmd
	logs   *testkit.Buffer
	exited chan error
	client *http.Client
	waited bool
	err    error
}

// startServe starts bin serve on cfgPath (listening on port) and waits
// until /readyz answers 200, failing the test with the cause (its exit,
// its log) when it exits first or is not ready within serveReady. The
// process is killed by its PID when the test ends, if still running.
func startServe(t *testing.T, bin, cfgPath string, port int) *serveProc {
	t.Helper()
	return startServeEnv(t, bin, cfgPath, port)
}

// startServeEnv is startServe with env added to the test's environment.
func startServeEnv(t *testing.T, bin, cfgPath string, port int, env ...string) *serveProc {
	t.Helper()
	p := &serveProc{
		url:    fmt.Sprintf("http://127.0.0.1:%d", port),
		cmd:    exec.Command(bin, "serve", "-config", cfgPath),
		logs:   &testkit.Buffer{},
		exited: make(chan error, 1),
		client: &http.Client{Timeout: 10 * time.Second},
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if len(env) > 0 {
		p.cmd.Env = append(os.Environ(), env...)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("airouter serve (pid %d) log:\n%s", p.cmd.Process.Pid, tail([]byte(p.logs.String()), 6000))
		}
		_ = p.cmd.Process.Kill()
		p.wait(t)
	})
	testkit.EventuallyWithin(t, serveReady, "airouter serve to answer /readyz 200", func() bool {
		select {
		case err := <-p.exited:
			p.waited, p.err = true, err
			t.Fatalf("airouter serve exited before it was ready: %v", err)
		default:
		}
		st, _, err := p.send("GET", "/readyz", nil)
		return err == nil && st == http.StatusOK
	})
	return p
}

// startOneCredential starts bin serve on an in-memory log with one
// credential, cred-a at baseURL serving gpt-test; extra holds more lines
// of the server section.
func startOneCredential(t *testing.T, bin, extra, baseURL string) *serveProc {
	t.Helper()
	dir := t.TempDir()
	port := freePorts(t, 1)[0]
	cfgPath := filepath.Join(dir, "airouter.yaml")
	writeFile(t, cfgPath, fmt.Sprintf("server:\n  port: %d\n  master_key: %s\n%s"+
		"events:\n  store_dir: %s\n  storage: memory\n"+
		"credentials:\n  - name: cred-a\n    type: openai\n    api_key: sk-upstream-secret-0\n    base_url: %s/v1\n"+
		"models:\n  - name: gpt-test\n", port, testMasterKey, extra, filepath.Join(dir, "data"), baseURL))
	return startServe(t, bin, cfgPath, port)
}

// wait returns how the process exited, waiting for it at most Wait.
func (p *serveProc) wait(t *testing.T) error {
	t.Helper()
	if !p.waited {
		p.err, p.waited = testkit.Receive(t, "airouter serve to exit", p.exited), true
	}
	return p.err
}

// send makes a request with the master key; it returns the error instead
// of failing the test, for goroutines and for requests the kill cuts.
func (p *serveProc) send(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, p.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+testMasterKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp.StatusCode, out, err
}
