package testkit

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
)

// Chromium finds Debian's chromium. Without it the test skips, unless
// AIROUTER_REQUIRE_BROWSER is set (CI sets it), where it fails.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("AIROUTER_REQUIRE_BROWSER") != "" {
		t.Fatal("chromium is not installed and AIROUTER_REQUIRE_BROWSER is set (apt-get install chromium)")
	}
	t.Skip("chromium is not installed; set AIROUTER_REQUIRE_BROWSER=1 to make that a failure")
	return ""
}

// Browser starts a headless chromium of its own (fresh profile, no
// network beyond the test's servers, clock zone UTC) and returns a tab;
// the test's cleanup stops it.
func Browser(t testing.TB) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		chromedp.Env("TZ=UTC"),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	return ctx
}

// Screenshot saves the page of tab ctx as name in $AIROUTER_SCREENSHOTS
// when it is set, for a person to look at.
func Screenshot(t testing.TB, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("AIROUTER_SCREENSHOTS")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot: %v", err)
		return
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		t.Logf("screenshot: %v", err)
	}
}
