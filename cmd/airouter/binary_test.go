package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// testVersion is the version the tests stamp into the binary.
const testVersion = "v9.8.7-test"

// run runs the built binary with args and env added to the test's
// environment, and returns its exit code, stdout and stderr.
func run(t *testing.T, bin string, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %s %v: %v", bin, args, err)
	}
	return code, stdout.String(), stderr.String()
}

// TestBinary builds airouter once, as a release is built (version stamped
// with -ldflags -X), and runs its subcommands as an operator would.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "airouter")
	// VCS stamping is asked for where git knows the checkout (GOFLAGS may
	// turn it off), so that version has a commit to print.
	vcs := "-buildvcs=false"
	if gitHead(t) != "" {
		vcs = "-buildvcs=true"
	}
	build := exec.Command("go", "build", vcs, "-o", bin, "-ldflags", "-X main.version="+testVersion, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("help", func(t *testing.T) { testHelp(t, bin) })
	t.Run("version", func(t *testing.T) { testVersionOutput(t, bin) })
	t.Run("check", func(t *testing.T) { testCheck(t, bin) })
	t.Run("probe", func(t *testing.T) { testProbe(t, bin) })
	t.Run("sigterm", func(t *testing.T) { testServeSIGTERM(t, bin) })
	t.Run("heap-floor", func(t *testing.T) { testHeapFloor(t, bin) })
	t.Run("pprof", func(t *testing.T) { testProfiles(t, bin) })
	t.Run("sigkill", func(t *testing.T) { testKilledStore(t, bin) })
	t.Run("server-process", func(t *testing.T) { testServerProcess(t, bin) })
	t.Run("steady-monitor", func(t *testing.T) { testSteadyMonitor(t, bin) })
	t.Run("local-cluster", func(t *testing.T) { testLocalCluster(t, bin) })
}

// Every subcommand answers -h with its usage and exit 0; so do -h and
// help; no subcommand, or an unknown one, is exit 1 with the list.
func testHelp(t *testing.T, bin string) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := run(t, bin, nil, c.name, "-h")
			if code != 0 {
				t.Fatalf("%s -h exit %d\n%s%s", c.name, code, stdout, stderr)
			}
			if !strings.Contains(strings.ToLower(stdout+stderr), "usage") {
				t.Fatalf("%s -h printed no usage:\n%s%s", c.name, stdout, stderr)
			}
		})
	}
	for _, args := range [][]string{{"-h"}, {"help"}} {
		code, _, stderr := run(t, bin, nil, args...)
		if code != 0 || !strings.Contains(stderr, "check") || !strings.Contains(stderr, "version") {
			t.Fatalf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	for _, args := range [][]string{nil, {"nosuch"}} {
		if code, _, stderr := run(t, bin, nil, args...); code != 1 || !strings.Contains(stderr, "usage: airouter") {
			t.Fatalf("%v: exit %d, want 1 with the usage\n%s", args, code, stderr)
		}
	}
}

// version prints the stamped version, the commit the build came from and
// the Go version.
func testVersionOutput(t *testing.T, bin string) {
	code, stdout, stderr := run(t, bin, nil, "version")
	if code != 0 {
		t.Fatalf("version: exit %d %s", code, stderr)
	}
	if !strings.Contains(stdout, "airouter "+testVersion+"\n") || !strings.Contains(stdout, "go "+runtime.Version()+"\n") {
		t.Fatalf("version printed:\n%s", stdout)
	}
	head := gitHead(t)
	if head == "" {
		t.Log("no git checkout here; the commit line is not compared")
		return
	}
	if want := "commit " + head; !strings.Contains(stdout, want) {
		t.Fatalf("version printed:\n%s\nwant a line starting %q", stdout, want)
	}
}

// gitHead is the commit of the checkout, or "" without git.
func gitHead(t *testing.T) string {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Logf("git rev-parse HEAD: %v", err)
		return ""
	}
	return strings.TrimSpace(string(head))
}

// A commit given with -ldflags -X main.commit names the build when it has
// no VCS information (the container's).
func TestVersionCommitFromLdflags(t *testing.T) {
	defer func(c string) { commit = c }(commit)
	commit = "0123abc"
	if v := readBuildVersion(); v.Commit != "0123abc" || v.Version != version || v.Go != runtime.Version() {
		t.Fatalf("readBuildVersion = %+v", v)
	}
}

// check validates without starting anything: a good file gives a summary
// with no secret in it and exit 0, a bad one every problem and exit 1.
func testCheck(t *testing.T, bin string) {
	dir := t.TempDir()
	store := filepath.Join(dir, "data")
	good := filepath.Join(dir, "good.yaml")
	writeFile(t, good, fmt.Sprintf(`server:
  port: 9191
  master_key: os.environ/CHECK_MASTER_KEY
  api_keys: [sk-client-key-visible-nowhere]
events:
  store_dir: %s
credentials:
  - name: a1
    type: openai
    api_key: os.environ/CHECK_OPENAI_KEY
    base_url: https://user:hunter2@api.example.com
  - name: a2
    type: openai
    api_key: sk-second-openai-key
    base_url: https://api.example.com
    is_fallback: true
  - name: c1
    type: anthropic
    api_key: sk-ant-key-visible-nowhere
    base_url: https://api.anthropic.com
models:
  - name: gpt-4o
  - name: claude
    credential: c1
model_alias:
  gpt4: gpt-4o
fail2ban:
  max_attempts: 4
  ban_duration: 10m
`, store))
	env := []string{"CHECK_MASTER_KEY=sk-master-key-visible-nowhere", "CHECK_OPENAI_KEY=sk-openai-key-visible-nowhere"}
	code, stdout, stderr := run(t, bin, env, "check", "-config", good)
	if code != 0 {
		t.Fatalf("check good: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"is valid",
		":9191",
		"3 (anthropic 1, openai 2), 1 in the fallback pool",
		"2 (claude, gpt-4o)",
		"aliases:     1",
		"embedded nats-server, file storage in " + store,
		"ban after 4 failures for 10m0s",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	for _, secret := range []string{"visible-nowhere", "hunter2", "sk-second"} {
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("check printed a secret (%s):\n%s%s", secret, stdout, stderr)
		}
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Errorf("check created the store directory (%v): it must start nothing", err)
	}

	bad := filepath.Join(dir, "bad.yaml")
	writeFile(t, bad, "server:\n  port: 0\n  prot: 1\ncredentials:\n  - name: x\n    type: nope\n    api_key: sk-bad-key-visible-nowhere\n")
	code, stdout, stderr = run(t, bin, nil, "check", "-config", bad)
	if code != 1 {
		t.Fatalf("check bad: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"server.port", "server.prot", "server.master_key", "credentials[0].type", "credentials[0].base_url"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("check bad does not name %s:\n%s", want, stderr)
		}
	}
	if strings.Contains(stdout+stderr, "visible-nowhere") {
		t.Errorf("check printed a secret:\n%s%s", stdout, stderr)
	}
	if code, _, stderr := run(t, bin, nil, "check", "-config", filepath.Join(dir, "missing.yaml")); code != 1 ||
		!strings.Contains(stderr, "missing.yaml") {
		t.Errorf("check of a missing file: exit %d %s", code, stderr)
	}
}

// probe exits 0 on a 2xx answer and 1 on anything else, naming why.
func testProbe(t *testing.T, bin string) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			fmt.Fprint(w, `{"status":"ready"}`)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"status":"draining"}`)
	}))
	defer srv.Close()
	if code, stdout, stderr := run(t, bin, nil, "probe", srv.URL+"/ok"); code != 0 || !strings.Contains(stdout, "200") {
		t.Fatalf("probe /ok: exit %d %s%s", code, stdout, stderr)
	}
	for _, tc := range []struct{ url, want string }{
		{srv.URL + "/no", "503"},
		{"ftp://127.0.0.1/x", "is not an http(s) URL"},
		{"http://127.0.0.1:1/readyz", "connect"},
	} {
		if code, _, stderr := run(t, bin, nil, "probe", tc.url); code != 1 || !strings.Contains(stderr, tc.want) {
			t.Errorf("probe %s: exit %d %q, want 1 naming %q", tc.url, code, stderr, tc.want)
		}
	}
}
