package config

import "time"

// Runtime is everything the runtime reads from a plan's config, parsed
// and checked: what checkpoints, restores and restarts do, and how often
// a keyed aggregation in updates mode emits. A key the config does not set
// has its registry default (Known; `flinkgo config` lists them), written
// nowhere else.
type Runtime struct {
	Checkpoint     CheckpointConfig
	Restore        RestoreConfig
	Restart        RestartConfig
	Rescale        RescaleConfig
	Autoscaler     AutoscalerConfig
	UpdateInterval time.Duration
	// StateTTL is table.exec.state.ttl: the processing-time TTL of join and
	// aggregation state that sets none itself (0: forever).
	StateTTL time.Duration
	// WatermarkInterval is pipeline.auto-watermark-interval: how often a
	// watermark assigner emits.
	WatermarkInterval time.Duration
	// BundleSize and BundleTime are the job's UDF bundle settings
	// (ConfigBundleSize, ConfigBundleTime), 0 where the plan sets none; set,
	// they override the runtime's options.
	BundleSize int
	BundleTime time.Duration
	// WorkerIdleTimeout and WorkerMaxIdle: how long, and how many, Python
	// workers the job leaves idle for later jobs (ConfigWorkerIdleTimeout,
	// ConfigWorkerMaxIdle).
	WorkerIdleTimeout time.Duration
	WorkerMaxIdle     int
	// WorkerTransport is ConfigWorkerTransport: a pluginrunner transport's
	// name, "" for the runner's default.
	WorkerTransport string
	// ExceptionHistorySize is ConfigExceptionHistorySize: how many
	// failures the job keeps for its exception history.
	ExceptionHistorySize int
}

// Parse reads the runtime's keys of a plan's config, reporting every
// problem in one error.
func Parse(cfg map[string]string) (Runtime, error) {
	c, err := parseConfig(cfg)
	return Runtime{Checkpoint: c.checkpoint, Restore: c.restore, Restart: c.restart, Rescale: c.rescale, Autoscaler: c.autoscaler, UpdateInterval: c.updateInterval, StateTTL: c.stateTTL,
		WatermarkInterval: c.watermarkInterval,
		BundleSize:        c.bundleSize, BundleTime: c.bundleTime,
		WorkerIdleTimeout: c.workerIdleTimeout, WorkerMaxIdle: c.workerMaxIdle,
		WorkerTransport: c.workerTransport, ExceptionHistorySize: c.exceptionHistorySize}, err
}
