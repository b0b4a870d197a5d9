package pluginrunner

// SharedCounts returns how many batches and results of r went through the
// shared-memory region.
func SharedCounts(r *Runner) (in, out int64) { return r.sharedIn.Load(), r.sharedOut.Load() }
