// Package gctune sets the Go garbage collector for the runtime process.
//
// The runtime allocates an Arrow batch's buffers for every step a batch
// takes, and frees them a moment later, while its live heap stays small
// (bounded inboxes). With Go's default GC target (100 %) the collector then
// runs several times a second and takes a tenth or more of the runtime's
// CPU, which on a small machine the Python workers would otherwise use. A
// target of 400 % makes collections four times rarer for a heap at most
// about five times the live one.
//
// Only a main package (the flinkgo binary) or a benchmark that stands for
// it calls Apply: the setting is process-wide. GOGC and GOMEMLIMIT, when
// set, win.
package gctune

import (
	"os"
	"runtime/debug"
)

// Percent is the GC target the runtime runs with.
const Percent = 400

// Apply sets the GC target to Percent unless $GOGC is set. Call it once,
// at the start of main.
func Apply() {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	debug.SetGCPercent(Percent)
}
