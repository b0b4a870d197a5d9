package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// runCLI runs the test binary as flinkgo with args and returns its
// stdout, stderr and exit code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// --help, -h and help print the usage on stdout and exit 0, as every CLI
// does (they exited 2); so does each command's --help, with the command's
// usage line and flags. A wrong command still exits 2.
func TestHelpExitsZero(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		out, errOut, code := runCLI(t, arg)
		if code != 0 || !strings.Contains(out, "usage:") || !strings.Contains(out, "flinkgo serve") {
			t.Errorf("flinkgo %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", arg, code, out, errOut)
		}
	}
	for _, cmd := range []string{"serve", "run", "list", "savepoint", "stop", "rescale", "cancel", "config"} {
		out, errOut, code := runCLI(t, cmd, "--help")
		if code != 0 || !strings.Contains(out, "usage: flinkgo "+cmd) || !strings.Contains(out, "-") {
			t.Errorf("flinkgo %s --help: exit %d, stdout %q, stderr %q; want 0, its usage line and flags on stdout", cmd, code, out, errOut)
		}
	}
	if _, errOut, code := runCLI(t, "frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("flinkgo frobnicate: exit %d, stderr %q; want 2 naming the command", code, errOut)
	}
	if _, errOut, code := runCLI(t, "list", "--no-such-flag"); code != 2 || !strings.Contains(errOut, "usage: flinkgo list") {
		t.Errorf("flinkgo list --no-such-flag: exit %d, stderr %q; want 2 with the usage", code, errOut)
	}
}
