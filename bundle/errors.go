package bundle

import "errors"

// ErrCanceled is the cause of a Cancel called without one: the task was
// canceled deliberately. Test it with errors.Is to tell a cancel from a
// failure; the caller should stop without reporting a failure.
var ErrCanceled = errors.New("bundle: operator canceled")

// ErrExecutorShutdown is returned by Executor.Submit after Shutdown or
// ShutdownNow. The operator is being torn down; the caller should stop.
var ErrExecutorShutdown = errors.New("bundle: bundle-flush executor is shut down")

// errFlushAbandoned ends a drain whose executor was shut down before the
// flush ended, so a flush dropped from the queue cannot leave it waiting.
var errFlushAbandoned = errors.New("bundle: bundle-flush executor shut down before the flush ended")
