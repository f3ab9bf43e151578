package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/airouter/airouter/config"
	"github.com/airouter/airouter/domain"
)

// runCheck validates a config file as serve loads it (config.Load, the one
// validator) without opening the log or a port: every problem at once, or
// a short summary of what the file configures, with no secret in it.
func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "config.yaml", "the config `FILE` to validate")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: airouter check -config FILE\n\n"+
			"Validates FILE as serve would, without starting anything (os.environ/VAR values are\n"+
			"read from this environment). Prints every problem and exits 1, or prints a summary\n"+
			"of what the file configures, secrets redacted, and exits 0.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("check: unexpected argument %q (the file goes after -config)", fs.Arg(0))
	}
	cfg, err := config.Load(*path)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "config %s is valid\n", *path)
	writeSummary(stdout, cfg)
	return nil
}

// writeSummary writes what cfg configures, one line per part, from its
// redacted copy.
func writeSummary(w io.Writer, cfg *config.Config) {
	cfg = cfg.Redacted()
	line := func(name, format string, args ...any) {
		fmt.Fprintf(w, "  %-12s %s\n", name+":", fmt.Sprintf(format, args...))
	}
	line("listen", ":%d (server.port); client keys: %d besides the master key", cfg.Server.Port, len(cfg.Server.APIKeys))
	line("credentials", "%s", credentialSummary(cfg.Credentials))
	line("models", "%s", modelSummary(cfg))
	line("aliases", "%d", len(cfg.ModelAlias))
	line("event store", "%s", storeSummary(cfg.Events))
	line("fail2ban", "%s", fail2banSummary(cfg.Fail2Ban))
	for _, warn := range cfg.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

// credentialSummary counts credentials by type, in type order, and the
// fallback ones.
func credentialSummary(creds []config.Credential) string {
	byType := map[domain.CredentialType]int{}
	var types []string
	fallback := 0
	for _, c := range creds {
		if byType[c.Type] == 0 {
			types = append(types, string(c.Type))
		}
		byType[c.Type]++
		if c.IsFallback {
			fallback++
		}
	}
	slices.Sort(types)
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%s %d", t, byType[domain.CredentialType(t)])
	}
	return fmt.Sprintf("%d (%s), %d in the fallback pool", len(creds), strings.Join(parts, ", "), fallback)
}

// modelSummary names the public models (the first ten), or says that
// credentials serve any model a client names.
func modelSummary(cfg *config.Config) string {
	routes := cfg.Routes()
	if !cfg.FiltersModels() {
		return "none listed: every credential serves whatever model a client names"
	}
	names := make([]string, 0, len(routes))
	for _, r := range routes {
		names = append(names, r.Model)
	}
	const shown = 10
	more := ""
	if len(names) > shown {
		more = fmt.Sprintf(", and %d more", len(names)-shown)
		names = names[:shown]
	}
	return fmt.Sprintf("%d (%s%s)", len(routes), strings.Join(names, ", "), more)
}

// storeSummary says where the event log lives; URLs come redacted.
func storeSummary(e config.Events) string {
	if e.Embedded() {
		s := fmt.Sprintf("embedded nats-server, %s storage in %s", e.Storage, e.StoreDir)
		if e.Listen != "" {
			s += ", accepting NATS clients on " + e.Listen
		}
		return s
	}
	return fmt.Sprintf("external NATS %s, %s storage, %d replica(s)", e.NATSURL, e.Storage, e.Replicas)
}

func fail2banSummary(f config.Fail2Ban) string {
	codes := make([]string, len(f.ErrorCodes))
	for i, c := range f.ErrorCodes {
		codes[i] = fmt.Sprint(c)
	}
	return fmt.Sprintf("ban after %d failures for %s on %s; %d per-code rule(s), %d credential override(s)",
		f.MaxAttempts, f.BanDuration, strings.Join(codes, ", "), len(f.ErrorCodeRules), len(f.CredentialOverrides))
}
