package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// idleHandling reads what the kernel says of idle CPUs from a sysfs tree:
// a host's driver and governor, a guest's halt polling (at once, fixed,
// adaptive), and the haltpoll module's parameters only with its driver.
func TestIdleHandling(t *testing.T) {
	write := func(root, rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const cpuidle, params = "sys/devices/system/cpu/cpuidle/", "sys/module/haltpoll/parameters/"
	cases := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no cpuidle", nil, "idle CPUs: the kernel does not say how they wait (no cpuidle driver)"},
		{"a host", map[string]string{cpuidle + "current_driver": "intel_idle\n", cpuidle + "current_governor": "menu\n"},
			"idle CPUs: cpuidle driver intel_idle, governor menu"},
		{"a read-only governor", map[string]string{cpuidle + "current_driver": "acpi_idle\n", cpuidle + "current_governor_ro": "ladder\n"},
			"idle CPUs: cpuidle driver acpi_idle, governor ladder"},
		{"a guest that halts at once", map[string]string{cpuidle + "current_driver": "haltpoll\n", cpuidle + "current_governor": "haltpoll\n",
			params + "guest_halt_poll_ns": "0\n", params + "guest_halt_poll_allow_shrink": "Y\n"},
			"idle CPUs: cpuidle driver haltpoll, governor haltpoll; an idle vCPU halts at once (guest_halt_poll_ns=0)"},
		{"a guest that polls, adaptively", map[string]string{cpuidle + "current_driver": "haltpoll\n", cpuidle + "current_governor": "haltpoll\n",
			params + "guest_halt_poll_ns": "200000\n", params + "guest_halt_poll_allow_shrink": "Y\n"},
			"idle CPUs: cpuidle driver haltpoll, governor haltpoll; an idle vCPU polls before it halts, adaptively: up to 200 µs, shrinking after longer idles"},
		{"a guest that polls, fixed", map[string]string{cpuidle + "current_driver": "haltpoll\n",
			params + "guest_halt_poll_ns": "200000\n", params + "guest_halt_poll_allow_shrink": "N\n"},
			"idle CPUs: cpuidle driver haltpoll; an idle vCPU polls up to 200 µs before it halts"},
		{"a host with the haltpoll module built in", map[string]string{cpuidle + "current_driver": "intel_idle\n", cpuidle + "current_governor": "menu\n",
			params + "guest_halt_poll_ns": "200000\n", params + "guest_halt_poll_allow_shrink": "Y\n"},
			"idle CPUs: cpuidle driver intel_idle, governor menu"},
		{"the haltpoll driver without its parameters", map[string]string{cpuidle + "current_driver": "haltpoll\n"},
			"idle CPUs: cpuidle driver haltpoll"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for rel, content := range c.files {
				write(root, rel, content)
			}
			if got := idleHandling(root); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

// Every run's table says, under its first line, how the machine's idle
// CPUs waited.
func TestRunHeaderSaysHowIdleCPUsWait(t *testing.T) {
	var out strings.Builder
	runResult{says: "pinned: test", idle: "idle CPUs: cpuidle driver test"}.write(&out, options{conns: 4, rounds: 1})
	lines := strings.SplitN(out.String(), "\n", 3)
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "pinned: test; 4 keep-alive connections") || lines[1] != "idle CPUs: cpuidle driver test" {
		t.Errorf("run header:\n%s", out.String())
	}
}
