package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// proc is a child process the benchmark started: a role of this binary or
// the airouter binary.
type proc struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	url  string
	// traceURL serves /debug/pprof/trace (-trace), "" when nothing does.
	traceURL string
}

// pinned prefixes argv with taskset -c cpu when cpu is not "".
func pinned(cpu string, argv ...string) *exec.Cmd {
	if cpu == "" {
		return exec.Command(argv[0], argv[1:]...)
	}
	return exec.Command("taskset", append([]string{"-c", cpu}, argv...)...)
}

// roleCommand is the command that runs self with args on cpu, with env
// added to this process's environment.
func roleCommand(self, cpu string, env []string, args ...string) *exec.Cmd {
	cmd := pinned(cpu, append([]string{self}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	return cmd
}

// startRole runs this binary as role (upstream, revproxy, gen) on cpu,
// with env added to this process's environment, and waits for its "ready"
// line.
func startRole(name, cpu string, env []string, args ...string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p := &proc{name: name, cmd: roleCommand(self, cpu, env, args...)}
	p.cmd.Stderr = os.Stderr
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p.out = bufio.NewReader(out)
	line, err := p.out.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready ") {
		p.stop()
		return nil, fmt.Errorf("%s did not start: %q %v", name, line, err)
	}
	urls := strings.Fields(strings.TrimPrefix(line, "ready "))
	if len(urls) > 0 {
		p.url = urls[0]
	}
	if len(urls) > 1 {
		p.traceURL = urls[1]
	}
	return p, nil
}

// load asks the generator for one run.
func (p *proc) load(c loadCmd) (loadResult, error) {
	b, _ := json.Marshal(c)
	if _, err := fmt.Fprintf(p.in, "%s\n", b); err != nil {
		return loadResult{}, err
	}
	line, err := p.out.ReadString('\n')
	if err != nil {
		return loadResult{}, fmt.Errorf("generator: %w", err)
	}
	var r loadResult
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return r, fmt.Errorf("generator said %q: %w", line, err)
	}
	return r, nil
}

// stop ends the process: its stdin closes (roles end with it), then an
// interrupt, then after 10 s a kill.
func (p *proc) stop() {
	if p.in != nil {
		_ = p.in.Close()
	}
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// pid is the root of the measured tree: taskset execs the program in its place,
// so the pid is the program's either way.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// cpu is the CPU seconds of the process and its descendants (treeCPU:
// each process's kernel CPU clock, in ns, and its reaped children's ticks).
func (p *proc) cpu() float64 { return treeCPU(p.pid()) }

// syscalls is how many read-family and write-family system calls the
// process and its descendants have made (treeSyscalls: syscr and syscw of
// /proc/<pid>/io): their sockets' reads and writes, and for airouter also
// the embedded log's file and connections. NaN where the counters cannot
// be read, which the tables print as "-".
func (p *proc) syscalls() (reads, writes float64) { return treeSyscalls(p.pid()) }

// peakRSS is the sum of the VmHWM of the process and its descendants in MB
// (treePeakRSS: an upper bound of their simultaneous peak).
func (p *proc) peakRSS() float64 { return treePeakRSS(p.pid()) }

// masterKey is the airouter child's master key (a benchmark-only value).
const masterKey = "airbench-master-key-0123456789"

// startAirouter runs the airouter binary bin on cpu with a config like
// the example's: two credentials on upstream, limits never reached, the
// embedded log in a temporary directory; with traces, its profiles on a
// port of their own (monitoring.pprof_listen).
func startAirouter(bin, cpu, dir, upstream string, traces bool) (*proc, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	monitoring, traceURL := "", ""
	if traces {
		tport, err := freePort()
		if err != nil {
			return nil, err
		}
		monitoring = fmt.Sprintf("monitoring:\n  pprof_listen: 127.0.0.1:%d\n", tport)
		traceURL = fmt.Sprintf("http://127.0.0.1:%d", tport)
	}
	cfg := fmt.Sprintf(`server:
  port: %d
  master_key: %s
  shutdown_delay: 0s
events:
  store_dir: %s
credentials:
  - {name: a, type: openai, api_key: sk-bench-a-0123456789, base_url: %s/v1, rpm: 1000000000, tpm: 1000000000}
  - {name: b, type: openai, api_key: sk-bench-b-0123456789, base_url: %s/v1, rpm: 1000000000, weight: 2}
models:
  - {name: gpt-4o, credential: a, rpm: 1000000000}
  - {name: gpt-4o, credential: b, model: gpt-4o-2024-08-06}
`, port, masterKey, filepath.Join(dir, "data"), upstream, upstream) + monitoring
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	p := &proc{name: "airouter", cmd: pinned(cpu, bin, "serve", "-config", path), url: fmt.Sprintf("http://127.0.0.1:%d", port),
		traceURL: traceURL}
	logPath := filepath.Join(dir, "airouter.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(p.url + "/health"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		if time.Now().After(deadline) {
			p.stop()
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("airouter did not become healthy on %s within 60 s; its log ends:\n%s", p.url, tail(log, 2048))
		}
	}
}

// freePort is a port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// buildAirouter builds cmd/airouter into dir (run from within the module).
func buildAirouter(dir string) (string, error) {
	bin := filepath.Join(dir, "airouter")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/airouter/airouter/cmd/airouter").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build cmd/airouter: %v\n%s", err, out)
	}
	return bin, nil
}

// tail is the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
