package main

import (
	"os"
	"testing"

	"github.com/airouter/airouter/transport/eventlog"
)

// TestMain lets the test binary be a router's event log server process:
// a router started in a test runs its file store's server by starting
// its executable (this binary) again with eventlog.ProcessArg.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == eventlog.ProcessArg {
		os.Exit(eventlog.ServeProcessMain())
	}
	os.Exit(m.Run())
}
