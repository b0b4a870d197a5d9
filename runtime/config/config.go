package config

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Plan config keys the runtime reads, with Flink's names where Flink has
// the option. Each is registered, with its type, default and description,
// in package config (Known).
const (
	ConfigCheckpointInterval        = "execution.checkpointing.interval"
	ConfigCheckpointDir             = "execution.checkpointing.dir"
	ConfigCheckpointsRetained       = "execution.checkpointing.num-retained"
	ConfigCheckpointTimeout         = "execution.checkpointing.timeout"
	ConfigTolerableFailures         = "execution.checkpointing.tolerable-failed-checkpoints"
	ConfigS3Endpoint                = "s3.endpoint"
	ConfigS3Region                  = "s3.region"
	ConfigS3AccessKey               = "s3.access-key"
	ConfigS3SecretKey               = "s3.secret-key"
	ConfigS3PathStyle               = "s3.path-style-access"
	ConfigS3InstanceMetadata        = "s3.credentials.instance-metadata"
	ConfigCheckpointRetention       = "execution.checkpointing.externalized-checkpoint-retention"
	ConfigCreateDirsOnCheckpoint    = "execution.checkpointing.create-dirs-on-first-checkpoint"
	ConfigSavepointDir              = "execution.checkpointing.savepoint-dir"
	ConfigUnalignedCheckpoints      = "execution.checkpointing.unaligned.enabled"
	ConfigRestorePath               = "execution.state-recovery.path"
	ConfigIgnoreUnclaimedState      = "execution.state-recovery.ignore-unclaimed-state"
	ConfigRestartStrategy           = "restart-strategy.type"
	ConfigFixedDelayAttempts        = "restart-strategy.fixed-delay.attempts"
	ConfigFixedDelay                = "restart-strategy.fixed-delay.delay"
	ConfigExponentialInitialBackoff = "restart-strategy.exponential-delay.initial-backoff"
	ConfigExponentialMaxBackoff     = "restart-strategy.exponential-delay.max-backoff"
	ConfigExponentialMultiplier     = "restart-strategy.exponential-delay.backoff-multiplier"
	ConfigExponentialAttempts       = "restart-strategy.exponential-delay.attempts"
	// ConfigUpdateInterval is how often a keyed aggregation in updates
	// mode emits the keys that changed.
	ConfigUpdateInterval = "pipeline.keyed-aggregate.update-interval"
	// ConfigStateTTL is the processing-time TTL of the state of regular
	// joins and keyed aggregations that set none themselves (Flink's key of
	// the same name); 0: kept forever.
	ConfigStateTTL = "table.exec.state.ttl"
	// ConfigAutoWatermarkInterval is how often a watermark assigner sends
	// its watermark (when it advanced) and checks idleness.
	ConfigAutoWatermarkInterval = "pipeline.auto-watermark-interval"
	// ConfigBundleSize and ConfigBundleTime set the UDF operators' bundle
	// (package bundle); when set they override Options.BundleSize and
	// Options.BundleTime.
	ConfigBundleSize = "python.fn-execution.bundle.size"
	ConfigBundleTime = "python.fn-execution.bundle.time"
	// ConfigBatchSize is the rows per batch sent to a Python worker when
	// no fused UDF sets batch_size (read by the planner).
	ConfigBatchSize = "python.fn-execution.arrow.batch.size"
	// ConfigWorkerIdleTimeout and ConfigWorkerMaxIdle: how long, and how
	// many, Python workers a job leaves idle for later jobs of a runtime
	// that reuses workers (pluginrunner.Pool).
	ConfigWorkerIdleTimeout = "python.worker.idle-timeout"
	ConfigWorkerMaxIdle     = "python.worker.max-idle"
	// ConfigRescaleCooldown and ConfigRescaleMaxCheckpointFailures time an
	// in-place rescale (RescaleConfig), with Flink's adaptive scheduler's
	// names.
	ConfigRescaleCooldown              = "jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling"
	ConfigRescaleMaxCheckpointFailures = "jobmanager.adaptive-scheduler.rescale-trigger.max-checkpoint-failures"
	// The autoscaler of UDF operators (AutoscalerConfig, package
	// autoscaler), with the Flink Kubernetes operator's names.
	ConfigAutoscalerEnabled           = "job.autoscaler.enabled"
	ConfigAutoscalerTarget            = "job.autoscaler.utilization.target"
	ConfigAutoscalerBoundary          = "job.autoscaler.utilization.boundary"
	ConfigAutoscalerStabilization     = "job.autoscaler.stabilization.interval"
	ConfigAutoscalerMetricsWindow     = "job.autoscaler.metrics.window"
	ConfigAutoscalerScaleDownInterval = "job.autoscaler.scale-down.interval"
	ConfigAutoscalerCatchUpDuration   = "job.autoscaler.catch-up.duration"
	// ConfigWorkerTransport is how batches travel to and from the Python
	// workers (pluginrunner.ParseTransport's names); unset, the runner's
	// default (shared memory on Linux).
	ConfigWorkerTransport = "python.worker.transport"
	// ConfigExceptionHistorySize bounds how many failures a job keeps for
	// its exception history (Flink's key of the same name).
	ConfigExceptionHistorySize = "web.exception-history-size"
)

// Values of ConfigCheckpointRetention, as Flink's.
const (
	RetainOnCancellation = "RETAIN_ON_CANCELLATION"
	DeleteOnCancellation = "DELETE_ON_CANCELLATION"
)

// CheckpointConfig says when and where a job checkpoints. The zero value
// (Interval 0) takes checkpoints only on demand (savepoints).
type CheckpointConfig struct {
	// Interval between the starts of periodic checkpoints; 0 for none.
	Interval time.Duration
	// Dir is the checkpoint storage: a job's checkpoints go under
	// Dir/<job-id>/. Required when Interval > 0.
	Dir string
	// Retained is how many completed checkpoints are kept.
	Retained int
	// Timeout aborts a checkpoint not completed in time.
	Timeout time.Duration
	// TolerableFailures is how many checkpoint failures in a row the job
	// tolerates; one more fails the job.
	TolerableFailures int
	// RetainOnCancel keeps the retained checkpoints when the job is
	// canceled. They are always kept when it fails, and deleted when it
	// finishes.
	RetainOnCancel bool
	// CreateDirsOnFirstCheckpoint creates Dir/<job-id>/... when the first
	// checkpoint starts, not when the job starts: a storage problem then
	// fails that checkpoint, not the job's start.
	CreateDirsOnFirstCheckpoint bool
	// SavepointDir is where savepoints go when their trigger names none.
	SavepointDir string
	// Unaligned makes checkpoints unaligned (Flink's FLIP-76): barriers
	// overtake the batches queued ahead of them, which are stored as
	// channel state. Savepoints stay aligned.
	Unaligned bool
	// S3 are the s3.* options of the S3 client for s3:// paths; S3Set
	// reports whether the config sets any of them.
	S3    S3Options
	S3Set bool
}

// S3Options are the s3.* keys of a config, as values: the runtime hands
// them to internal/objstore (this package imports only the standard
// library, so reading a config never pulls in an object-store SDK).
type S3Options struct {
	Endpoint, Region     string
	AccessKey, SecretKey string
	PathStyle            bool
	InstanceMetadata     bool
}

// RestoreConfig says which checkpoint or savepoint a job starts from.
type RestoreConfig struct {
	// Path of a savepoint directory, a retained checkpoint's chk-<n>
	// directory, or a _metadata file. Empty for a fresh start.
	Path string
	// IgnoreUnclaimedState lets the job start when the snapshot holds
	// state of an operator uid the job no longer has (Flink's
	// allow-non-restored-state).
	IgnoreUnclaimedState bool
}

// RescaleConfig times an in-place rescale of a running job (package job),
// as Flink's adaptive scheduler (FLIP-291, FLIP-461).
type RescaleConfig struct {
	// Cooldown: after the job starts or rescales, a requested rescale
	// waits this long before it may happen.
	Cooldown time.Duration
	// MaxCheckpointFailures: a requested rescale happens at the next
	// completed checkpoint, or after this many failed checkpoints in a
	// row (from the latest completed one).
	MaxCheckpointFailures int
}

// AutoscalerConfig sets the autoscaler of the job's UDF operators that
// declare concurrency=(min, max) (package autoscaler).
type AutoscalerConfig struct {
	// Enabled: job.autoscaler.enabled.
	Enabled bool
	// Target and Boundary: the utilization the autoscaler aims at, and the
	// band around it within which it leaves a vertex alone.
	Target, Boundary float64
	// Stabilization: after the job starts or rescales, how long no metric
	// is collected.
	Stabilization time.Duration
	// MetricsWindow: the span the rates and busy ratios are averaged
	// over.
	MetricsWindow time.Duration
	// ScaleDownInterval: a scale-down waits this long after the last
	// rescale.
	ScaleDownInterval time.Duration
	// CatchUpDuration: the time a source's backlog should be read off in;
	// its target rate gets pendingRecords / CatchUpDuration on top. 0: no
	// catch-up term.
	CatchUpDuration time.Duration
}

// RestartConfig is the restart strategy after a failure, as Flink's.
type RestartConfig struct {
	// Strategy is "none", "fixed-delay" or "exponential-delay".
	Strategy string
	// Attempts is how many restarts are allowed (fixed-delay: in all;
	// exponential-delay: in all too, unlike Flink's unbounded default, so
	// that a UDF failing on every row fails the job in the end).
	Attempts int
	// Delay before each restart (fixed-delay), or the first backoff
	// (exponential-delay), multiplied by Multiplier up to MaxBackoff.
	Delay      time.Duration
	MaxBackoff time.Duration
	Multiplier float64
}

// runtimeConfig is everything the runtime reads from the plan's config.
type runtimeConfig struct {
	checkpoint        CheckpointConfig
	restore           RestoreConfig
	restart           RestartConfig
	rescale           RescaleConfig
	autoscaler        AutoscalerConfig
	updateInterval    time.Duration
	stateTTL          time.Duration
	watermarkInterval time.Duration
	// bundleSize and bundleTime are the job's bundle settings, 0 where the
	// plan sets none.
	bundleSize int
	bundleTime time.Duration
	// workerIdleTimeout and workerMaxIdle: see ConfigWorkerIdleTimeout.
	workerIdleTimeout time.Duration
	workerMaxIdle     int
	// workerTransport is ConfigWorkerTransport's value, "" when unset.
	workerTransport string
	// exceptionHistorySize: see ConfigExceptionHistorySize.
	exceptionHistorySize int
}

// parseConfig checks a plan's config against the registry of known keys
// (an unknown key fails the job) and reads the runtime's keys, reporting
// every problem in one error.
func parseConfig(cfg map[string]string) (runtimeConfig, error) {
	return parseConfigWith(Known(), cfg)
}

// parseConfigWith is parseConfig against registry known, whose defaults
// the values the config does not set take.
func parseConfigWith(known Registry, cfg map[string]string) (runtimeConfig, error) {
	p := configParser{cfg: cfg, known: known}
	var invalid *Error
	if err := known.Validate(cfg); err != nil {
		if !errors.As(err, &invalid) {
			return runtimeConfig{}, fmt.Errorf("config: %w", err)
		}
		p.reported = map[string]bool{}
		for _, pr := range invalid.Problems {
			p.reported[pr.Key] = true
		}
	}
	var c runtimeConfig
	cp := &c.checkpoint
	cp.Interval = p.duration(ConfigCheckpointInterval)
	cp.Dir = p.str(ConfigCheckpointDir)
	cp.Retained = p.integer(ConfigCheckpointsRetained, 1)
	cp.Timeout = p.duration(ConfigCheckpointTimeout)
	cp.TolerableFailures = p.integer(ConfigTolerableFailures, 0)
	switch v := strings.ToUpper(p.str(ConfigCheckpointRetention)); v {
	case RetainOnCancellation, DeleteOnCancellation:
		cp.RetainOnCancel = v == RetainOnCancellation
	default:
		p.problem(ConfigCheckpointRetention, "must be %s or %s", RetainOnCancellation, DeleteOnCancellation)
	}
	cp.CreateDirsOnFirstCheckpoint = p.boolean(ConfigCreateDirsOnCheckpoint)
	cp.SavepointDir = p.str(ConfigSavepointDir)
	cp.Unaligned = p.boolean(ConfigUnalignedCheckpoints)
	cp.S3 = S3Options{
		Endpoint: p.str(ConfigS3Endpoint), Region: p.str(ConfigS3Region),
		AccessKey: p.str(ConfigS3AccessKey), SecretKey: p.str(ConfigS3SecretKey),
		PathStyle: p.boolean(ConfigS3PathStyle), InstanceMetadata: p.boolean(ConfigS3InstanceMetadata),
	}
	for _, k := range []string{ConfigS3Endpoint, ConfigS3Region, ConfigS3AccessKey, ConfigS3SecretKey, ConfigS3PathStyle, ConfigS3InstanceMetadata} {
		if _, ok := p.cfg[k]; ok {
			cp.S3Set = true
		}
	}
	if (cp.S3.AccessKey == "") != (cp.S3.SecretKey == "") {
		p.problems = append(p.problems, fmt.Sprintf("%s and %s go together: set both or neither", ConfigS3AccessKey, ConfigS3SecretKey))
	}
	if cp.Interval > 0 && cp.Dir == "" {
		p.problems = append(p.problems, fmt.Sprintf("%s is set but %s is not: say where checkpoints go", ConfigCheckpointInterval, ConfigCheckpointDir))
	}
	if cp.Interval < 0 || cp.Timeout <= 0 {
		p.problems = append(p.problems, fmt.Sprintf("%s must not be negative and %s must be positive", ConfigCheckpointInterval, ConfigCheckpointTimeout))
	}

	c.updateInterval = p.duration(ConfigUpdateInterval)
	if c.updateInterval <= 0 {
		p.problem(ConfigUpdateInterval, "must be positive")
		c.updateInterval = p.registryDuration(ConfigUpdateInterval)
	}
	c.stateTTL = p.duration(ConfigStateTTL)
	if c.stateTTL < 0 {
		p.problem(ConfigStateTTL, "must not be negative")
		c.stateTTL = p.registryDuration(ConfigStateTTL)
	}
	c.watermarkInterval = p.duration(ConfigAutoWatermarkInterval)
	if c.watermarkInterval <= 0 {
		p.problem(ConfigAutoWatermarkInterval, "must be positive")
		c.watermarkInterval = p.registryDuration(ConfigAutoWatermarkInterval)
	}
	if p.isSet(ConfigBundleSize) {
		c.bundleSize = p.integer(ConfigBundleSize, 1)
	}
	if p.isSet(ConfigBundleTime) {
		c.bundleTime = p.duration(ConfigBundleTime)
	}
	c.workerIdleTimeout = p.duration(ConfigWorkerIdleTimeout)
	if c.workerIdleTimeout < 0 {
		p.problem(ConfigWorkerIdleTimeout, "must not be negative")
	}
	c.workerMaxIdle = p.integer(ConfigWorkerMaxIdle, 0)
	c.rescale.Cooldown = p.duration(ConfigRescaleCooldown)
	if c.rescale.Cooldown < 0 {
		p.problem(ConfigRescaleCooldown, "must not be negative")
	}
	c.rescale.MaxCheckpointFailures = p.integer(ConfigRescaleMaxCheckpointFailures, 1)
	as := &c.autoscaler
	as.Enabled = p.boolean(ConfigAutoscalerEnabled)
	as.Target = p.float(ConfigAutoscalerTarget, 0)
	if as.Target <= 0 || as.Target > 1 {
		p.problem(ConfigAutoscalerTarget, "must be above 0 and at most 1")
	}
	as.Boundary = p.float(ConfigAutoscalerBoundary, 0)
	as.Stabilization = p.duration(ConfigAutoscalerStabilization)
	as.MetricsWindow = p.duration(ConfigAutoscalerMetricsWindow)
	as.ScaleDownInterval = p.duration(ConfigAutoscalerScaleDownInterval)
	as.CatchUpDuration = p.duration(ConfigAutoscalerCatchUpDuration)
	if as.Stabilization < 0 || as.ScaleDownInterval < 0 || as.CatchUpDuration < 0 {
		p.problems = append(p.problems, fmt.Sprintf("%s, %s and %s must not be negative", ConfigAutoscalerStabilization, ConfigAutoscalerScaleDownInterval, ConfigAutoscalerCatchUpDuration))
	}
	if as.Enabled && cp.Interval <= 0 {
		p.problems = append(p.problems, fmt.Sprintf("%s needs %s: the autoscaler rescales the job in place, from its next completed checkpoint", ConfigAutoscalerEnabled, ConfigCheckpointInterval))
	}
	if as.MetricsWindow < time.Second {
		p.problem(ConfigAutoscalerMetricsWindow, "must be at least 1 s (the autoscaler samples once a second)")
	}
	c.workerTransport = strings.ToLower(p.str(ConfigWorkerTransport))
	switch c.workerTransport {
	case "", "shared-memory", "unix-socket", "grpc-stream":
	default:
		p.problem(ConfigWorkerTransport, "must be shared-memory, unix-socket or grpc-stream")
		c.workerTransport = ""
	}
	c.exceptionHistorySize = p.integer(ConfigExceptionHistorySize, 1)
	c.restore.Path = p.str(ConfigRestorePath)
	c.restore.IgnoreUnclaimedState = p.boolean(ConfigIgnoreUnclaimedState)

	// Flink's default: no restarts without checkpointing (the registry's
	// default), else exponential-delay.
	r := &c.restart
	r.Strategy = strings.ToLower(p.str(ConfigRestartStrategy))
	if cp.Interval > 0 && strings.TrimSpace(p.cfg[ConfigRestartStrategy]) == "" {
		r.Strategy = "exponential-delay"
	}
	switch r.Strategy {
	case "none", "disable", "off":
		r.Strategy = "none"
	case "fixed-delay", "fixeddelay":
		r.Strategy = "fixed-delay"
		r.Attempts = p.integer(ConfigFixedDelayAttempts, 0)
		r.Delay = p.duration(ConfigFixedDelay)
		r.Multiplier, r.MaxBackoff = 1, r.Delay
	case "exponential-delay", "exponentialdelay":
		r.Strategy = "exponential-delay"
		r.Attempts = p.integer(ConfigExponentialAttempts, 0)
		r.Delay = p.duration(ConfigExponentialInitialBackoff)
		r.MaxBackoff = p.duration(ConfigExponentialMaxBackoff)
		r.Multiplier = p.float(ConfigExponentialMultiplier, 1)
	default:
		p.problem(ConfigRestartStrategy, "must be none, fixed-delay or exponential-delay")
	}
	if invalid == nil && len(p.problems) == 0 {
		return c, nil
	}
	if invalid == nil {
		invalid = &Error{}
	}
	for _, msg := range p.problems {
		invalid.Problems = append(invalid.Problems, Problem{Message: msg})
	}
	// The message starts "invalid config": what the user set (Environment(config=...),
	// flinkgo config -c), not a package of the runtime.
	return c, invalid
}

// configParser reads typed values and collects every problem. A key the
// config does not set takes its registry default (Key.Default): the one
// place a default is written.
type configParser struct {
	cfg      map[string]string
	known    Registry
	problems []string
	// reported are the keys the registry found wrong, whose problems are
	// not reported twice.
	reported map[string]bool
}

func (p *configParser) problem(key, format string, args ...any) {
	if p.reported[key] {
		return
	}
	p.problems = append(p.problems, fmt.Sprintf("%s=%q: ", key, p.cfg[key])+fmt.Sprintf(format, args...))
}

// registryDefault is key's default in the registry. Reading a key that is
// not registered is a bug of the runtime, which parsing an empty config
// and each restart strategy's shows (TestParseConfigDefaultsAreTheRegistrys).
func (p *configParser) registryDefault(key string) string {
	k, ok := p.known.Lookup(key)
	if !ok {
		panic(fmt.Sprintf("config: key %s is read but not registered", key))
	}
	return k.Default
}

// registryDuration is key's default as a duration; a default the registry
// cannot parse is a bug its tests catch (TestEveryKeyIsDescribedAndItsDefaultIsValid).
func (p *configParser) registryDuration(key string) time.Duration {
	def := p.registryDefault(key)
	if def == "" {
		return 0
	}
	d, err := ParseDuration(def)
	if err != nil {
		panic(fmt.Sprintf("config: the default of %s: %v", key, err))
	}
	return d
}

// isSet reports whether the config gives key a value.
func (p *configParser) isSet(key string) bool {
	_, ok := p.cfg[key]
	return ok
}

func (p *configParser) str(key string) string {
	if v, ok := p.cfg[key]; ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return p.registryDefault(key)
}

func (p *configParser) integer(key string, least int) int {
	def := 0
	if d := p.registryDefault(key); d != "" {
		var err error
		if def, err = strconv.Atoi(d); err != nil {
			panic(fmt.Sprintf("config: the default of %s: %v", key, err))
		}
	}
	v, ok := p.cfg[key]
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < least {
		p.problem(key, "must be an integer of at least %d", least)
		return def
	}
	return n
}

func (p *configParser) float(key string, least float64) float64 {
	def := 0.0
	if d := p.registryDefault(key); d != "" {
		var err error
		if def, err = strconv.ParseFloat(d, 64); err != nil {
			panic(fmt.Sprintf("config: the default of %s: %v", key, err))
		}
	}
	v, ok := p.cfg[key]
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < least || math.IsInf(f, 0) {
		p.problem(key, "must be a number of at least %g", least)
		return def
	}
	return f
}

func (p *configParser) boolean(key string) bool {
	def := p.registryDefault(key) == "true"
	v, ok := p.cfg[key]
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		p.problem(key, "must be true or false")
		return def
	}
	return b
}

// duration reads Flink's duration syntax: a number of milliseconds, or a
// number with a unit (ms, s, min, h, d; "10 s", "10s"), or a Go duration.
func (p *configParser) duration(key string) time.Duration {
	def := p.registryDuration(key)
	v, ok := p.cfg[key]
	if !ok {
		return def
	}
	d, err := ParseDuration(v)
	if err != nil {
		p.problem(key, "%v", err)
		return def
	}
	return d
}
