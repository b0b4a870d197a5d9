package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/chromedp/chromedp"
)

// ChromiumEnv names a Chromium (or Chrome) binary for the browser tests;
// unset, they look for Debian's chromium on PATH (`make test-deps-chromium`
// installs it).
const ChromiumEnv = "FLINKGO_CHROMIUM"

// Chromium returns the browser binary the tests drive. Without one the test
// is skipped with a message saying how to install it, or fails when
// $FLINKGO_REQUIRE_PYTHON is 1 (as under `make test`, which installs it).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(ChromiumEnv); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := fmt.Sprintf("testkit: this test needs a headless Chromium: run `make test-deps-chromium` "+
		"(Debian's chromium package) or set %s to a Chromium binary; `make test` installs it and fails without one (%s=1).",
		ChromiumEnv, RequirePythonEnv)
	if os.Getenv(RequirePythonEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Browser starts a headless Chromium for the test, with a window of
// width x height, and returns a chromedp context driving its first tab.
// The browser ends when the test does.
func Browser(t testing.TB, width, height int) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Chromium(t)), chromedp.WindowSize(width, height),
		// No user data of the machine's: a profile of the test's own.
		chromedp.UserDataDir(t.TempDir()))
	// As root (CI) chromedp adds --no-sandbox: Chromium refuses its sandbox there.
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc, chromedp.WithErrorf(t.Logf))
	t.Cleanup(func() {
		cancel()
		cancelAlloc() // kills the browser and waits for it
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("testkit: Chromium did not start: %v", err)
	}
	return ctx
}
