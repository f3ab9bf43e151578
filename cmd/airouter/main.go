// Command airouter is the router binary: `serve` runs the proxy on its event
// log; `replay`, `export`, `tail` and `whatif` read that log for
// operators; `check`
// validates a config, `version` names the build and `probe` is the
// container's health check. It holds the flags and the wiring, and is the
// only package that imports every other one and reads config: it turns the
// config into plain values, opens transport/eventlog, restores
// projections, builds transport/proxy and adminapi over them, installs
// decisions' engine as the writer's AfterApply, and serves HTTP. An
// event's whole path is assembled here (proxywire.go, router.go,
// surfaces.go); no logic of the path lives here beyond that wiring and the
// adapters of eventlog.Reader and adminapi to incident's ports (tools.go).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/airouter/airouter/transport/eventlog"
)

// command is one subcommand: its name, a one-line summary and its entry
// point, which parses its own flags.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"serve", "run the router: airouter serve -config FILE", runServe},
		{"replay", "print the log as a timeline, or a view at a moment: airouter replay -config FILE [-at T -view health]", runReplay},
		{"export", "write a window of the log as JSONL: airouter export -config FILE -since 2h > incident.jsonl", runExport},
		{"tail", "follow the live log: airouter tail -config FILE [-bans]", runTail},
		{"whatif", "weigh other ban rules against the log: airouter whatif -policy NEW.yaml -config FILE -since 24h", runWhatif},
		{"check", "validate a config without starting anything: airouter check -config FILE", runCheck},
		{"version", "print the version, commit and Go version: airouter version", runVersion},
		{"probe", "GET a URL, exit 0 on 2xx (the container health check): airouter probe URL", runProbe},
	}
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == eventlog.ProcessArg {
		// The router's own event log server (events.server_process), not
		// a subcommand for operators: it ends with its stdin.
		os.Exit(eventlog.ServeProcessMain())
	}
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		steadyMonitor(os.Stderr)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := dispatch(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			// -h printed the usage that was asked for.
			return
		}
		fmt.Fprintln(os.Stderr, "airouter:", err)
		os.Exit(1)
	}
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "help" || args[0] == "--help" {
		usage(stderr)
		if len(args) == 0 {
			return errors.New("a subcommand is required")
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown subcommand %q", args[0])
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: airouter <subcommand> [flags]")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}
