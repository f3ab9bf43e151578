package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is the release this binary is, set when building with
// -ldflags "-X main.version=v1.2.3"; "dev" otherwise. commit, set the same
// way (-X main.commit=...), names the commit of a build that has no VCS
// information, such as the container's.
var (
	version = "dev"
	commit  = ""
)

// buildVersion is what `airouter version` prints: the release (version,
// or the module version `go install` stamped), the commit the binary was
// built from ("+modified" when the tree had changes; "unknown" without
// VCS information) and the Go version.
type buildVersion struct {
	Version, Commit, Go string
}

func readBuildVersion() buildVersion {
	v := buildVersion{Version: version, Commit: "unknown", Go: runtime.Version()}
	if commit != "" {
		v.Commit = commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if v.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v.Version = bi.Main.Version
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && v.Commit != "unknown" {
		v.Commit += "+modified"
	}
	if commit != "" {
		v.Commit = commit
	}
	return v
}

func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: airouter version\n\nPrints the version, the commit and the Go version of this binary.")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("version takes no arguments, got %q", fs.Arg(0))
	}
	v := readBuildVersion()
	fmt.Fprintf(stdout, "airouter %s\ncommit %s\ngo %s\n", v.Version, v.Commit, v.Go)
	return nil
}
