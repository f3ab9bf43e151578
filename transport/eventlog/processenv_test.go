package eventlog

import (
	"slices"
	"testing"
)

// TestProcessEnvKeepsOnlyWhatTheServerNeeds: the runtime's settings and
// the system's few variables pass, in their order; keys (a GO-prefixed
// one too) and everything else stay with the router.
func TestProcessEnvKeepsOnlyWhatTheServerNeeds(t *testing.T) {
	in := []string{
		"OPENAI_API_KEY=sk-live-0123456789",
		"GOMEMLIMIT=512MiB",
		"PATH=/usr/bin:/bin",
		"AIROUTER_MASTER_KEY=master-0123456789",
		"GODEBUG=madvdontneed=1",
		"HOME=/home/router",
		"LC_ALL=C.UTF-8",
		"TZ=UTC",
		"TMPDIR=/tmp/r",
		"GOOGLE_API_KEY=AIza-0123456789",
		"GOGC", // no '=': not a variable
		"LANG=C",
		"HTTPS_PROXY=http://proxy.internal:3128",
		"PATHS=not-path",
		"LD_LIBRARY_PATH=/opt/lib",
		"ZONEINFO=/opt/zoneinfo.zip",
	}
	want := []string{
		"GOMEMLIMIT=512MiB", "PATH=/usr/bin:/bin", "GODEBUG=madvdontneed=1", "HOME=/home/router",
		"LC_ALL=C.UTF-8", "TZ=UTC", "TMPDIR=/tmp/r", "LANG=C", "LD_LIBRARY_PATH=/opt/lib", "ZONEINFO=/opt/zoneinfo.zip",
	}
	if got := ProcessEnv(in); !slices.Equal(got, want) {
		t.Errorf("ProcessEnv = %q, want %q", got, want)
	}
	// Nothing to keep is an empty environment, not a nil one (which
	// exec.Cmd reads as the router's whole environment).
	if got := ProcessEnv([]string{"OPENAI_API_KEY=sk-live-0123456789"}); got == nil || len(got) != 0 {
		t.Errorf("ProcessEnv of a key alone = %#v, want an empty, non-nil environment", got)
	}
}
