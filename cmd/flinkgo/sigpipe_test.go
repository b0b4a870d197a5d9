package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The runtime survives writing to a closed pipe: with the reader of its
// stdout gone, `flinkgo version` still exits 0 instead of dying of SIGPIPE.
func TestClosedStdoutDoesNotKillTheRuntime(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "flinkgo")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // nobody reads: the first write gets EPIPE (and SIGPIPE)
	cmd := exec.Command(bin, "version")
	cmd.Stdout = w
	err = cmd.Run()
	w.Close()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("flinkgo version with a closed stdout: %v (killed by a signal: %v)", err, exit.ProcessState.String())
	}
	if err != nil {
		t.Fatal(err)
	}
}
