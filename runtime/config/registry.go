package config

import (
	"fmt"
	"slices"
	"strings"
)

// Type is the type of a key's value.
type Type int

const (
	// TypeInt is a decimal integer.
	TypeInt Type = iota + 1
	// TypeFloat is a decimal number.
	TypeFloat
	// TypeBool is true or false (strconv.ParseBool's spellings).
	TypeBool
	// TypeDuration is Flink's duration syntax (ParseDuration).
	TypeDuration
	// TypeEnum is one of Key.Values, in any case.
	TypeEnum
	// TypePath is a file system path; blank means unset.
	TypePath
	// TypeString is free text (an endpoint, a credential); blank means
	// unset.
	TypeString
)

// String names the type as users read it in errors and `flinkgo config`.
func (t Type) String() string {
	switch t {
	case TypeInt:
		return "integer"
	case TypeFloat:
		return "number"
	case TypeBool:
		return "boolean"
	case TypeDuration:
		return "duration"
	case TypeEnum:
		return "enum"
	case TypePath:
		return "path"
	case TypeString:
		return "string"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Key describes one configuration key.
type Key struct {
	// Name is the key as a plan sets it, e.g. "execution.checkpointing.interval".
	Name string
	Type Type
	// Default is the value used when the plan does not set the key, in the
	// key's own syntax; "" when unset means something the Description
	// explains (no directory, a value derived from the job).
	Default string
	// Description says what the key does, in a sentence or two.
	Description string
	// ReadBy names the component that reads the key, e.g.
	// "runtime/checkpoint: checkpoint coordinator".
	ReadBy string
	// Values are the accepted values of an enum, canonical spelling.
	Values []string
	// Aliases are further accepted spellings of an enum's values, shown
	// nowhere (kept for Flink's older names).
	Aliases []string
	// Min and Max bound an integer, number or duration, in the key's own
	// syntax; "" for no bound.
	Min, Max string
	// Secret keys (credentials) are shown as HiddenValue wherever the
	// configuration is printed, as Flink hides its sensitive keys.
	Secret bool
}

// Expected says what a valid value looks like, e.g. "an integer of at
// least 1", for errors and `flinkgo config`.
func (k Key) Expected() string {
	var s string
	switch k.Type {
	case TypeInt:
		s = "an integer"
	case TypeFloat:
		s = "a number"
	case TypeBool:
		return "true or false"
	case TypeDuration:
		s = `a duration ("500 ms", "10 s", "1 min"; a bare number is milliseconds)`
	case TypeEnum:
		return "one of " + strings.Join(k.Values, ", ")
	case TypePath:
		return "a path"
	case TypeString:
		return "a string"
	default:
		return k.Type.String()
	}
	switch {
	case k.Min != "" && k.Max != "":
		s += fmt.Sprintf(" between %s and %s", k.Min, k.Max)
	case k.Min != "":
		s += " of at least " + k.Min
	case k.Max != "":
		s += " of at most " + k.Max
	}
	return s
}

// Components that read keys (Key.ReadBy).
const (
	readByPlanner    = "runtime/plan: planner"
	readByCheckpoint = "runtime/checkpoint: checkpoint coordinator"
	readByRestore    = "runtime/job: restore"
	readByS3         = "internal/objstore: S3 client of checkpoint storage"
	readByRestart    = "runtime/job: restart strategy"
	readByAggregate  = "runtime/operators: keyed aggregation"
	readByStateTTL   = "runtime/operators: regular join and keyed aggregation"
	readByUDF        = "runtime/operators: UDF operators (package bundle)"
	readByWatermarks = "runtime/operators: watermark assigners (with_watermark)"
	readByWorkerPool = "udf/bridge/pluginrunner: worker pool"
	readByRescale    = "runtime/job: in-place rescale"
	readByAutoscaler = "runtime/autoscaler: autoscaler of UDF operators"
	readByWorker     = "udf/bridge/pluginrunner: UDF runner"
	readByREST       = "runtime/rest: REST API and Prometheus endpoint of the embedded runtime"
	readByExceptions = "runtime/job: exception history (REST /jobs/:jid/exceptions)"
)

// Known returns the registry of every key the runtime reads. Each call
// builds a new table, so no caller can change another's.
func Known() Registry {
	return newRegistry([]Key{
		{
			Name: "pipeline.forward-mismatch", Type: TypeEnum, Default: "rebalance", ReadBy: readByPlanner,
			Values:      []string{"rebalance", "rescale", "fail"},
			Description: "What a forward edge between operators of different parallelism becomes: a rebalance, a rescale, or an error at planning.",
		},
		{
			Name: "pipeline.max-parallelism", Type: TypeInt, Min: "1", Max: "32768", ReadBy: readByPlanner,
			Description: "Number of key groups, the upper bound of any rescaling of keyed state. Unset: the restored snapshot's, else Flink's default for the largest parallelism (at least 128).",
		},
		{
			Name: "pipeline.prune-unread-columns", Type: TypeBool, Default: "true", ReadBy: readByPlanner,
			Description: "Removes the columns no downstream operator reads from the selects and UDF operators that output them, so that they cross no exchange.",
		},
		{
			Name: "pipeline.keyed-aggregate.update-interval", Type: TypeDuration, Default: "1 s", Min: "1 ms", ReadBy: readByAggregate,
			Description: "How often a keyed aggregation in updates mode emits the keys that changed.",
		},
		{
			Name: "table.exec.state.ttl", Type: TypeDuration, Default: "0 ms", Min: "0 ms", ReadBy: readByStateTTL,
			Description: "Processing-time time-to-live of the state of regular joins and keyed aggregations that set no state_ttl themselves: a key's state untouched that long is dropped (Flink's key of the same name). 0: kept forever.",
		},
		{
			Name: "pipeline.auto-watermark-interval", Type: TypeDuration, Default: "200 ms", Min: "1 ms", ReadBy: readByWatermarks,
			Description: "How often a watermark assigner (with_watermark) sends its watermark downstream when it advanced, and checks for idleness (Flink's key of the same name).",
		},
		// The batch and bundle defaults are not PyFlink's: PyFlink 2.x
		// sends 1 000-row batches in 1 000-row bundles, which suits its
		// Beam runner; here every batch costs a round trip of a fixed
		// 0.2-1 ms to the worker, so 10 000-row batches in 100 000-row
		// bundles keep that cost well below the UDF's own. Package bundle
		// and the planner take them from here (DefaultInt).
		{
			Name: "python.fn-execution.arrow.batch.size", Type: TypeInt, Default: "10000", Min: "1", ReadBy: readByPlanner,
			Description: "Rows per batch sent to a Python worker when no fused UDF sets batch_size (capped at the bundle size).",
		},
		{
			Name: "python.fn-execution.bundle.size", Type: TypeInt, Default: "100000", Min: "1", ReadBy: readByUDF,
			Description: "Rows after which a UDF operator finishes its bundle: every result of the bundle is emitted before more rows go in. Overrides the runtime's own setting.",
		},
		{
			Name: "python.fn-execution.bundle.time", Type: TypeDuration, Default: "1 s", Min: "1 ms", ReadBy: readByUDF,
			Description: "Time after a bundle's first row at which a UDF operator finishes the bundle. Overrides the runtime's own setting.",
		},
		{
			Name: "rest.port", Type: TypeInt, Min: "0", Max: "65535", ReadBy: readByREST,
			Description: "The embedded runtime serves Flink's REST API on this port (from the first job that sets it on, until the runtime ends); unset: no REST API. `flinkgo serve` takes --rest-port instead.",
		},
		{
			Name: "rest.address", Type: TypeString, Default: "127.0.0.1", ReadBy: readByREST,
			Description: "The address the embedded runtime's REST API and Prometheus endpoint bind. Another address than loopback needs rest.auth-token.",
		},
		{
			Name: "rest.auth-token", Type: TypeString, Secret: true, ReadBy: readByREST,
			Description: "A bearer token that admits its bearer to the REST API from anywhere, as \"Authorization: Bearer <token>\"; unset: only the server's own user (and root) on the same host, told by the owner of its loopback socket (Linux), may change jobs or read them.",
		},
		{
			Name: "rest.read-access", Type: TypeEnum, Default: "owner", ReadBy: readByREST,
			Values:      []string{"owner", "any"},
			Description: "Who may read the jobs through the REST API and the Prometheus endpoint: owner (those who may change them: the server's user over loopback, or the token's bearer) or any (everyone who reaches the port).",
		},
		{
			Name: "rest.allowed-hosts", Type: TypeString, ReadBy: readByREST,
			Description: "Names (comma-separated) a REST call's Host header may carry besides IP addresses, localhost and rest.address; any other name is refused (DNS rebinding).",
		},
		{
			Name: "metrics.reporter.prom.port", Type: TypeInt, Min: "0", Max: "65535", ReadBy: readByREST,
			Description: "The embedded runtime serves the jobs' metrics for Prometheus at /metrics on this port; unset: only the REST API's /metrics, if any. `flinkgo serve` takes --prom-port instead.",
		},
		{
			Name: "python.worker.idle-timeout", Type: TypeDuration, Default: "60 s", Min: "0 ms", ReadBy: readByWorkerPool,
			Description: "How long a Python worker that ended this job's UDF operator in order stays idle for a later job of the same runtime and Python environment (the embedded runtime and `flinkgo run` reuse workers; a `flinkgo serve` does not). 0: this job's workers are stopped at its end.",
		},
		{
			Name: "python.worker.max-idle", Type: TypeInt, Default: "8", Min: "0", ReadBy: readByWorkerPool,
			Description: "Most idle Python workers the runtime keeps once this job gave its workers back; the oldest idle ones are stopped beyond it. 0: none.",
		},
		{
			Name: "python.worker.transport", Type: TypeEnum, ReadBy: readByWorker,
			Values:      []string{"shared-memory", "unix-socket", "grpc-stream"},
			Description: "How batches travel between a UDF operator and its Python worker: shared-memory (the batches' Arrow data in memory both processes map, only offsets on a Unix socket; Linux only), unix-socket (the data on the socket) or grpc-stream. Unset: shared-memory on Linux, else unix-socket.",
		},
		{
			Name: "execution.checkpointing.interval", Type: TypeDuration, Default: "0 ms", ReadBy: readByCheckpoint,
			Description: "Time between the starts of periodic checkpoints; 0 for none (savepoints only). Needs execution.checkpointing.dir.",
		},
		{
			Name: "execution.checkpointing.dir", Type: TypePath, ReadBy: readByCheckpoint,
			Description: "Checkpoint storage: a job's checkpoints go under <dir>/<job-id>/.",
		},
		{
			Name: "execution.checkpointing.num-retained", Type: TypeInt, Default: "1", Min: "1", ReadBy: readByCheckpoint,
			Description: "How many completed checkpoints are kept.",
		},
		{
			Name: "execution.checkpointing.timeout", Type: TypeDuration, Default: "10 min", Min: "1 ms", ReadBy: readByCheckpoint,
			Description: "A checkpoint not completed in this time is aborted.",
		},
		{
			Name: "execution.checkpointing.tolerable-failed-checkpoints", Type: TypeInt, Default: "0", Min: "0", ReadBy: readByCheckpoint,
			Description: "How many checkpoint failures in a row the job tolerates; one more fails it.",
		},
		{
			Name: "execution.checkpointing.externalized-checkpoint-retention", Type: TypeEnum, Default: "DELETE_ON_CANCELLATION", ReadBy: readByCheckpoint,
			Values:      []string{"DELETE_ON_CANCELLATION", "RETAIN_ON_CANCELLATION"},
			Description: "Whether a canceled job keeps its retained checkpoints (a failed job always keeps them, a finished one never).",
		},
		{
			Name: "execution.checkpointing.create-dirs-on-first-checkpoint", Type: TypeBool, Default: "false", ReadBy: readByCheckpoint,
			Description: "Create the checkpoint directories when the first checkpoint starts rather than when the job starts, so a storage problem fails that checkpoint, not the start.",
		},
		{
			Name: "execution.checkpointing.savepoint-dir", Type: TypePath, ReadBy: readByCheckpoint,
			Description: "Where savepoints go when their trigger names no directory.",
		},
		{
			Name: "execution.checkpointing.unaligned.enabled", Type: TypeBool, Default: "false", ReadBy: readByCheckpoint,
			Description: "Unaligned checkpoints (FLIP-76): barriers overtake the batches queued ahead of them, which are stored in the checkpoint as channel state and replayed on restore, so that a checkpoint under backpressure takes the barrier's travel time, not the backlog's. Savepoints stay aligned; a job restored from a checkpoint with channel state cannot change its parallelism.",
		},
		{
			Name: "s3.endpoint", Type: TypeString, ReadBy: readByS3,
			Description: "S3-compatible endpoint URL for s3:// checkpoint and savepoint paths (empty: AWS, or AWS_ENDPOINT_URL_S3). " +
				"The S3 client is the runtime's: every job of a runtime must give the same s3.* settings.",
		},
		{
			Name: "s3.region", Type: TypeString, ReadBy: readByS3,
			Description: "Region of the S3 client (empty: AWS_REGION, else us-east-1).",
		},
		{
			Name: "s3.access-key", Type: TypeString, ReadBy: readByS3, Secret: true,
			Description: "Access key of the S3 client, with s3.secret-key (empty: the AWS default chain, AWS_ACCESS_KEY_ID ...).",
		},
		{
			Name: "s3.secret-key", Type: TypeString, ReadBy: readByS3, Secret: true,
			Description: "Secret key of the S3 client, with s3.access-key.",
		},
		{
			Name: "s3.path-style-access", Type: TypeBool, Default: "false", ReadBy: readByS3,
			Description: "Address buckets as <endpoint>/<bucket> rather than <bucket>.<endpoint> (most S3-compatible servers need true).",
		},
		{
			Name: "s3.credentials.instance-metadata", Type: TypeBool, Default: "false", ReadBy: readByS3,
			Description: "Let the S3 client take credentials (and the region) from the EC2 instance metadata service when the job, the environment and the shared AWS files give none. " +
				"Off by default: the instance's role is the server's, not its clients'; a runtime on EC2 that checkpoints with its instance role sets it.",
		},
		{
			Name: "execution.state-recovery.path", Type: TypePath, ReadBy: readByRestore,
			Description: "Savepoint, retained checkpoint (chk-<n>) or _metadata file the job starts from; unset for a fresh start.",
		},
		{
			Name: "execution.state-recovery.ignore-unclaimed-state", Type: TypeBool, Default: "false", ReadBy: readByRestore,
			Description: "Start even when the snapshot holds state of an operator uid the job no longer has (Flink's allow-non-restored-state).",
		},
		{
			Name: "jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling", Type: TypeDuration, Default: "30 s", Min: "0 ms", ReadBy: readByRescale,
			Description: "After the job starts or rescales, how long a requested rescale waits before it may happen (as Flink's adaptive scheduler).",
		},
		{
			Name: "jobmanager.adaptive-scheduler.rescale-trigger.max-checkpoint-failures", Type: TypeInt, Default: "2", Min: "1", ReadBy: readByRescale,
			Description: "A requested rescale happens at the next completed checkpoint, or after this many failed checkpoints in a row, from the latest completed one (FLIP-461).",
		},
		{
			Name: "job.autoscaler.enabled", Type: TypeBool, Default: "false", ReadBy: readByAutoscaler,
			Description: "Rescale the UDF operators that declare concurrency=(min, max) from their busy time and the source rate (as the Flink Kubernetes operator's autoscaler); needs execution.checkpointing.interval.",
		},
		{
			Name: "job.autoscaler.utilization.target", Type: TypeFloat, Default: "0.7", Min: "0", Max: "1", ReadBy: readByAutoscaler,
			Description: "The busy ratio the autoscaler aims at: a vertex gets ceil(p * target rate / (true rate * target)) subtasks.",
		},
		{
			Name: "job.autoscaler.utilization.boundary", Type: TypeFloat, Default: "0.3", Min: "0", ReadBy: readByAutoscaler,
			Description: "The band around the target utilization within which a vertex keeps its parallelism.",
		},
		{
			Name: "job.autoscaler.stabilization.interval", Type: TypeDuration, Default: "5 min", Min: "0 ms", ReadBy: readByAutoscaler,
			Description: "After the job starts or rescales, how long the autoscaler collects no metrics.",
		},
		{
			Name: "job.autoscaler.metrics.window", Type: TypeDuration, Default: "15 min", Min: "1 s", ReadBy: readByAutoscaler,
			Description: "The span over which rates and busy ratios are averaged; the autoscaler decides once a full window is collected.",
		},
		{
			Name: "job.autoscaler.scale-down.interval", Type: TypeDuration, Default: "1 h", Min: "0 ms", ReadBy: readByAutoscaler,
			Description: "A scale-down waits this long after the last rescale (a scale-up never waits).",
		},
		{
			Name: "job.autoscaler.catch-up.duration", Type: TypeDuration, Default: "5 min", Min: "0 ms", ReadBy: readByAutoscaler,
			Description: "The time in which a source's backlog (pendingRecords) should be read off: a source's target rate gets pendingRecords / this on top, and so do the vertices downstream; 0 turns the catch-up term off.",
		},
		{
			Name: "restart-strategy.type", Type: TypeEnum, Default: "none", ReadBy: readByRestart,
			Values:      []string{"none", "fixed-delay", "exponential-delay"},
			Aliases:     []string{"disable", "off", "fixeddelay", "exponentialdelay"},
			Description: "Restarts after a failure. Unset: exponential-delay when checkpointing is on (execution.checkpointing.interval), else none.",
		},
		{
			Name: "restart-strategy.fixed-delay.attempts", Type: TypeInt, Default: "1", Min: "0", ReadBy: readByRestart,
			Description: "fixed-delay: how many restarts are allowed in all.",
		},
		{
			Name: "restart-strategy.fixed-delay.delay", Type: TypeDuration, Default: "1 s", ReadBy: readByRestart,
			Description: "fixed-delay: the wait before each restart.",
		},
		{
			Name: "restart-strategy.exponential-delay.attempts", Type: TypeInt, Default: "10", Min: "0", ReadBy: readByRestart,
			Description: "exponential-delay: how many restarts are allowed in all (bounded, unlike Flink's, so a UDF failing on every row fails the job in the end).",
		},
		{
			Name: "restart-strategy.exponential-delay.initial-backoff", Type: TypeDuration, Default: "1 s", ReadBy: readByRestart,
			Description: "exponential-delay: the wait before the first restart.",
		},
		{
			Name: "restart-strategy.exponential-delay.max-backoff", Type: TypeDuration, Default: "1 min", ReadBy: readByRestart,
			Description: "exponential-delay: the longest wait before a restart.",
		},
		{
			Name: "restart-strategy.exponential-delay.backoff-multiplier", Type: TypeFloat, Default: "1.5", Min: "1", ReadBy: readByRestart,
			Description: "exponential-delay: the factor by which the wait grows after each restart.",
		},
		{
			Name: "web.exception-history-size", Type: TypeInt, Default: "16", Min: "1", ReadBy: readByExceptions,
			Description: "How many of its failures a job keeps for /jobs/:jid/exceptions (each that a restart recovered from, and the one that ended it), newest kept; older ones are dropped and the history says it was truncated.",
		},
	})
}

// renamedHint points a key users bring from another Flink version, which
// flinkgo does not read, at what does its job here; "" for other keys.
func renamedHint(name string) string {
	var to string
	switch name {
	case "state.checkpoints.dir":
		to = "execution.checkpointing.dir"
	case "state.checkpoints.num-retained":
		to = "execution.checkpointing.num-retained"
	case "state.savepoints.dir":
		to = "execution.checkpointing.savepoint-dir"
	case "execution.savepoint.path":
		to = "execution.state-recovery.path"
	case "execution.savepoint.ignore-unclaimed-state":
		to = "execution.state-recovery.ignore-unclaimed-state"
	case "restart-strategy":
		to = "restart-strategy.type"
	case "parallelism.default":
		return "the plan's default parallelism is Environment(parallelism=...)"
	default:
		return ""
	}
	return fmt.Sprintf("this is an older Flink name: flinkgo reads %q", to)
}

// Registry is a table of known keys. Its methods never modify it.
type Registry struct {
	keys   []Key
	byName map[string]int
}

func newRegistry(keys []Key) Registry {
	r := Registry{keys: keys, byName: make(map[string]int, len(keys))}
	for i, k := range keys {
		r.byName[k.Name] = i
	}
	return r
}

// Keys returns every key, sorted by name. The keys are copies: changing
// them changes no registry.
func (r Registry) Keys() []Key {
	keys := make([]Key, len(r.keys))
	for i, k := range r.keys {
		keys[i] = k.clone()
	}
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.Name, b.Name) })
	return keys
}

// Lookup returns the key named name.
func (r Registry) Lookup(name string) (Key, bool) {
	i, ok := r.byName[name]
	if !ok {
		return Key{}, false
	}
	return r.keys[i].clone(), true
}

func (k Key) clone() Key {
	k.Values, k.Aliases = slices.Clone(k.Values), slices.Clone(k.Aliases)
	return k
}

// Problem is one thing wrong with a config.
type Problem struct {
	// Key is the key as the config spells it, Value its value; Key is
	// empty for a problem between keys, which Message names.
	Key, Value string
	// Unknown says no component reads Key.
	Unknown bool
	// Message says what is wrong and what would be right.
	Message string
}

func (p Problem) String() string {
	if p.Key == "" {
		return p.Message // about several keys, which it names
	}
	if p.Unknown {
		return fmt.Sprintf("unknown key %q: %s", p.Key, p.Message)
	}
	return fmt.Sprintf("%s=%q: %s", p.Key, p.Value, p.Message)
}

// Error reports every problem of a config: Validate's sorted by key, then
// those between keys that a reader adds.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return "invalid config: " + e.Problems[0].String()
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "invalid config, %d problems:", len(e.Problems))
	for _, p := range e.Problems {
		sb.WriteString("\n  - ")
		sb.WriteString(p.String())
	}
	return sb.String()
}

// Validate checks every entry of cfg: the key must be known and its value
// of the key's type and within its bounds. It returns nil or an *Error
// listing every problem.
func (r Registry) Validate(cfg map[string]string) error {
	var problems []Problem
	for name, value := range cfg {
		k, ok := r.Lookup(name)
		if !ok {
			problems = append(problems, Problem{Key: name, Value: value, Unknown: true, Message: r.unknownHint(name)})
			continue
		}
		if msg := k.check(value); msg != "" {
			problems = append(problems, Problem{Key: name, Value: value, Message: msg})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.SortFunc(problems, func(a, b Problem) int { return strings.Compare(a.Key, b.Key) })
	return &Error{Problems: problems}
}

// Setting is a key with the value a config gives it.
type Setting struct {
	Key
	// Value is the config's value, else the key's default.
	Value string
	// IsSet says the config sets the key (Value may equal the default).
	IsSet bool
}

// HiddenValue stands for the value of a Secret key where the
// configuration is shown (Flink's GlobalConfiguration.HIDDEN_CONTENT).
const HiddenValue = "******"

// Effective returns every known key, sorted by name, with its value in cfg
// or its default; a Secret key's value set in cfg is HiddenValue. Unknown
// keys of cfg are not in it: Validate reports them.
func (r Registry) Effective(cfg map[string]string) []Setting {
	var out []Setting
	for _, k := range r.Keys() {
		s := Setting{Key: k, Value: k.Default}
		if v, ok := cfg[k.Name]; ok {
			s.Value, s.IsSet = v, true
			if k.Secret {
				s.Value = HiddenValue
			}
		}
		out = append(out, s)
	}
	return out
}

// Redact returns a copy of cfg with the value of every Secret key set in
// it replaced by HiddenValue: what may be shown of a job's configuration.
func (r Registry) Redact(cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg))
	for name, v := range cfg {
		if k, ok := r.Lookup(name); ok && k.Secret && v != "" {
			v = HiddenValue
		}
		out[name] = v
	}
	return out
}

// SecretValues returns the values cfg gives its Secret keys, the empty
// ones left out: what must never be shown anywhere.
func (r Registry) SecretValues(cfg map[string]string) []string {
	var out []string
	for name, v := range cfg {
		if k, ok := r.Lookup(name); ok && k.Secret && v != "" {
			out = append(out, v)
		}
	}
	return out
}

// unknownHint says what the user may have meant by an unknown key: a key
// renamed in Flink, close matches by edit distance, else the known keys
// sharing the longest dotted prefix with it.
func (r Registry) unknownHint(name string) string {
	if hint := renamedHint(strings.ToLower(strings.TrimSpace(name))); hint != "" {
		return hint
	}
	if close := r.closeMatches(name); len(close) > 0 {
		return "did you mean " + quoteAll(close, " or ") + "?"
	}
	if family := r.prefixMatches(name); len(family) > 0 {
		return "no key is close; the known keys under that prefix are " + quoteAll(family, ", ")
	}
	return "no key is close; known keys start with " + strings.Join(r.families(), ", ") + " (`flinkgo config` lists them all)"
}

// closeMatches returns the known keys closest to name within a small edit
// distance (ties all), sorted; case and surrounding space do not count.
func (r Registry) closeMatches(name string) []string {
	norm := strings.ToLower(strings.TrimSpace(name))
	// A typo or two in a short key, a few more in a long one.
	limit := max(2, len(norm)/10)
	type match struct {
		name string
		dist int
	}
	var matches []match
	for _, k := range r.keys {
		if d := editDistance(norm, k.Name); d <= limit {
			matches = append(matches, match{k.Name, d})
		} else if strings.HasSuffix(k.Name, "."+norm) {
			// A key written without its leading segments.
			matches = append(matches, match{k.Name, limit + 1})
		}
	}
	slices.SortFunc(matches, func(a, b match) int {
		if a.dist != b.dist {
			return a.dist - b.dist
		}
		return strings.Compare(a.name, b.name)
	})
	// Only the closest: a second guess further off is noise.
	var out []string
	for _, m := range matches {
		if m.dist == matches[0].dist {
			out = append(out, m.name)
		}
	}
	return out
}

// prefixMatches returns the known keys sharing the most leading dotted
// segments with name (at least one), sorted.
func (r Registry) prefixMatches(name string) []string {
	segs := strings.Split(strings.ToLower(strings.TrimSpace(name)), ".")
	for n := len(segs) - 1; n >= 1; n-- {
		prefix := strings.Join(segs[:n], ".") + "."
		var out []string
		for _, k := range r.Keys() {
			if strings.HasPrefix(k.Name, prefix) {
				out = append(out, k.Name)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// families returns the first segments of the known keys, as "pipeline.".
func (r Registry) families() []string {
	var out []string
	for _, k := range r.Keys() {
		first, _, _ := strings.Cut(k.Name, ".")
		if f := first + "."; !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func quoteAll(names []string, sep string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(quoted, sep)
}

// editDistance is the Levenshtein distance between a and b, in bytes (keys
// are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
