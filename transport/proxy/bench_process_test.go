package proxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The benchmark's last two targets compare whole processes: a bare
// httputil.ReverseProxy in a child process (this test binary again), and
// the real thing, the airouter binary built from cmd/airouter with a config
// like benchAirouter's (embedded log, decisions, metrics, everything
// `serve` wires). Their CPU is read from /proc, so they exist on Linux only.

// benchUpstreamEnv tells a reverse-proxy child where to proxy to.
const benchUpstreamEnv = "AIROUTER_BENCH_UPSTREAM"

// runReverseProxyChild serves a bare reverse proxy to upstream on
// 127.0.0.1 until in is closed.
func runReverseProxyChild(upstream string, in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: bareReverseProxy(upstream)}
	go func() { _ = srv.Serve(ln) }()
	fmt.Fprintf(out, "ready http://%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, in)
	return srv.Close()
}

// airouterProcess is a running airouter binary.
type airouterProcess struct {
	url string
	pid int
}

// procCPU reads a process's user+system CPU time from /proc/<pid>/stat
// (clock ticks of 10 ms: over a round of thousands of requests the error
// per request is well under a microsecond).
func procCPU(pid int) func() float64 {
	return func() float64 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0
		}
		return statCPU(b)
	}
}

func statCPU(b []byte) float64 {
	// Fields after the command name, which is in parentheses: state is
	// field 3, utime 14 and stime 15.
	rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}

// startAirouterProcess builds cmd/airouter and runs it against the
// upstream.
func startAirouterProcess(b *testing.B, upstreamURL string) airouterProcess {
	dir := b.TempDir()
	bin := filepath.Join(dir, "airouter")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "github.com/airouter/airouter/cmd/airouter")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build airouter: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	cfg := fmt.Sprintf(`server:
  port: %d
  master_key: %s
events:
  store_dir: %s
credentials:
  - name: a
    type: openai
    api_key: sk-bench-a-0123456789
    base_url: %s/v1
    rpm: 1000000000
    tpm: 1000000000
  - name: b
    type: openai
    api_key: sk-bench-b-0123456789
    base_url: %s/v1
    rpm: 1000000000
    weight: 2
models:
  - name: gpt-4o
    credential: a
    rpm: 1000000000
  - name: gpt-4o
    credential: b
    model: gpt-4o-2024-08-06
`, port, masterKey, filepath.Join(dir, "data"), upstreamURL, upstreamURL)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", "-config", path)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(url + "/health")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("airouter did not become healthy on %s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return airouterProcess{url: url, pid: cmd.Process.Pid}
}
