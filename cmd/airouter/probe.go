package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/airouter/airouter/redact"
)

// defaultProbeURL is the readiness probe of a router on the default port.
const defaultProbeURL = "http://127.0.0.1:8080/readyz"

// runProbe GETs a URL and succeeds on a 2xx answer: the container's
// health check, in an image that has no shell and no curl.
func runProbe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeout := fs.Duration("timeout", 3*time.Second, "give up after `D`")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: airouter probe [-timeout D] [URL]\n\n"+
			"GETs URL (default %s) and exits 0 on a 2xx answer, 1 otherwise.\n", defaultProbeURL)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	target := defaultProbeURL
	switch fs.NArg() {
	case 0:
	case 1:
		target = fs.Arg(0)
	default:
		return fmt.Errorf("probe takes one URL, got %d arguments", fs.NArg())
	}
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("probe: %q is not an http(s) URL", redact.URLs(target))
	}
	if *timeout <= 0 {
		return fmt.Errorf("probe: -timeout %s must be positive", *timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("probe %s: %w", redact.URLs(target), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("probe %s: %d %s", redact.URLs(target), resp.StatusCode, redact.String(string(body)))
	}
	fmt.Fprintf(stdout, "%d %s", resp.StatusCode, body)
	return nil
}
