package config_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/internal/keygroup"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

func TestEveryKeyIsDescribedAndItsDefaultIsValid(t *testing.T) {
	keys := config.Known().Keys()
	if len(keys) == 0 {
		t.Fatal("no keys")
	}
	for _, k := range keys {
		if k.Name == "" || k.Type == 0 || k.Description == "" || k.ReadBy == "" {
			t.Errorf("%q: name, type, description and reader are all required: %+v", k.Name, k)
		}
		if k.Type == config.TypeEnum && len(k.Values) == 0 {
			t.Errorf("%s: an enum without values", k.Name)
		}
		if k.Default != "" {
			if err := config.Known().Validate(map[string]string{k.Name: k.Default}); err != nil {
				t.Errorf("%s: its default does not validate: %v", k.Name, err)
			}
		}
		for _, bound := range []string{k.Min, k.Max} {
			if bound != "" && config.Known().Validate(map[string]string{k.Name: bound}) != nil {
				t.Errorf("%s: bound %q is not a valid value", k.Name, bound)
			}
		}
	}
}

// The keys the planner and the runtime read are registered, with the
// defaults those packages use.
func TestRegistryAgreesWithTheReaders(t *testing.T) {
	r := config.Known()
	for _, name := range []string{
		plan.ConfigForwardMismatch, plan.ConfigMaxParallelism, plan.ConfigBatchSize,
		config.ConfigCheckpointInterval, config.ConfigCheckpointDir, config.ConfigCheckpointsRetained,
		config.ConfigCheckpointTimeout, config.ConfigTolerableFailures, config.ConfigCheckpointRetention,
		config.ConfigCreateDirsOnCheckpoint, config.ConfigSavepointDir, config.ConfigUnalignedCheckpoints, config.ConfigRestorePath,
		config.ConfigIgnoreUnclaimedState, config.ConfigRestartStrategy, config.ConfigFixedDelayAttempts,
		config.ConfigFixedDelay, config.ConfigExponentialInitialBackoff, config.ConfigExponentialMaxBackoff,
		config.ConfigExponentialMultiplier, config.ConfigExponentialAttempts, config.ConfigUpdateInterval,
		config.ConfigBundleSize, config.ConfigBundleTime, config.ConfigAutoWatermarkInterval, config.ConfigWorkerTransport,
		config.ConfigStateTTL,
	} {
		if _, ok := r.Lookup(name); !ok {
			t.Errorf("%s is read but not registered", name)
		}
	}
	def := func(name string) string {
		k, _ := r.Lookup(name)
		return k.Default
	}
	if got := def(plan.ConfigForwardMismatch); got != plan.ForwardMismatchRebalance {
		t.Errorf("forward-mismatch default %s, planner's %s", got, plan.ForwardMismatchRebalance)
	}
	if k, _ := r.Lookup(plan.ConfigMaxParallelism); k.Max != strconv.Itoa(keygroup.UpperBoundMaxParallelism) {
		t.Errorf("max-parallelism bound %s, planner's %d", k.Max, keygroup.UpperBoundMaxParallelism)
	}
	// The batch and bundle defaults of package bundle and the planner are
	// the registry's own (config.DefaultInt): nothing to keep equal.
	if plan.ConfigBatchSize != config.ConfigBatchSize {
		t.Errorf("the planner reads %s, the registry's batch size key is %s", plan.ConfigBatchSize, config.ConfigBatchSize)
	}
}

// problems validates cfg and returns the problems it reports.
func problems(t *testing.T, cfg map[string]string) []config.Problem {
	t.Helper()
	err := config.Known().Validate(cfg)
	var e *config.Error
	if !errors.As(err, &e) {
		t.Fatalf("Validate(%v) = %v, want a *config.Error", cfg, err)
	}
	return e.Problems
}

func TestUnknownKeysSayWhatWasMeant(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want []string
	}{
		{"python.fn-execution.bundle.sise", []string{`did you mean "python.fn-execution.bundle.size"`}},
		{"Pipeline.Max-Parallelism", []string{`did you mean "pipeline.max-parallelism"`}},
		{"execution.checkpointing.intervall", []string{`did you mean "execution.checkpointing.interval"`}},
		{"checkpointing.interval", []string{`did you mean "execution.checkpointing.interval"`}},
		{"restart-strategy.fixed-delay.tries", []string{
			"no key is close", `"restart-strategy.fixed-delay.attempts", "restart-strategy.fixed-delay.delay"`,
		}},
		{"python.executable", []string{"no key is close", `"python.fn-execution.arrow.batch.size"`, `"python.fn-execution.bundle.time"`}},
		{"taskmanager.memory.size", []string{"no key is close", "known keys start with execution., job., jobmanager., metrics., pipeline., python., rest., restart-strategy.", "flinkgo config"}},
		{"state.checkpoints.dir", []string{`older Flink name: flinkgo reads "execution.checkpointing.dir"`}},
		{"parallelism.default", []string{"Environment(parallelism=...)"}},
	} {
		t.Run(tc.key, func(t *testing.T) {
			ps := problems(t, map[string]string{tc.key: "1"})
			if len(ps) != 1 || !ps[0].Unknown || ps[0].Key != tc.key {
				t.Fatalf("problems %+v", ps)
			}
			msg := ps[0].String()
			if !strings.Contains(msg, `unknown key "`+tc.key+`"`) {
				t.Errorf("%q does not name the key", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
		})
	}
}

func TestBadValuesNameKeyValueAndType(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string
	}{
		{"python.fn-execution.bundle.size", "lots", `python.fn-execution.bundle.size="lots": expected an integer of at least 1`},
		{"python.fn-execution.bundle.size", "0", `expected an integer of at least 1`},
		{"pipeline.max-parallelism", "40000", `expected an integer between 1 and 32768`},
		{"python.fn-execution.bundle.time", "soon", `python.fn-execution.bundle.time="soon": expected a duration`},
		{"python.fn-execution.bundle.time", "0", `expected a duration ("500 ms", "10 s", "1 min"; a bare number is milliseconds) of at least 1 ms`},
		{"execution.checkpointing.interval", "-5 s", `expected a duration`},
		{"execution.checkpointing.create-dirs-on-first-checkpoint", "yes", `="yes": expected true or false`},
		{"pipeline.forward-mismatch", "shuffle", `="shuffle": expected one of rebalance, rescale, fail`},
		{"restart-strategy.exponential-delay.backoff-multiplier", "0.5", `expected a number of at least 1`},
		{"restart-strategy.exponential-delay.backoff-multiplier", "NaN", `expected a number of at least 1`},
		{"execution.checkpointing.num-retained", " ", `empty; expected an integer of at least 1 (remove the key to take the default)`},
	} {
		ps := problems(t, map[string]string{tc.key: tc.value})
		if len(ps) != 1 || !strings.Contains(ps[0].String(), tc.want) {
			t.Errorf("%s=%q: %v, want %q", tc.key, tc.value, ps, tc.want)
		}
	}
}

func TestGoodValuesPass(t *testing.T) {
	cfg := map[string]string{
		"python.fn-execution.bundle.size":                           " 1000 ",
		"python.fn-execution.bundle.time":                           "250ms",
		"execution.checkpointing.interval":                          "10 s",
		"execution.checkpointing.timeout":                           "1min",
		"execution.checkpointing.dir":                               "/tmp/chk",
		"execution.checkpointing.savepoint-dir":                     "",
		"execution.checkpointing.externalized-checkpoint-retention": "retain_on_cancellation",
		"pipeline.forward-mismatch":                                 " Rescale",
		"restart-strategy.type":                                     "fixeddelay",
		"restart-strategy.exponential-delay.backoff-multiplier":     "2",
		"execution.state-recovery.ignore-unclaimed-state":           "TRUE",
	}
	if err := config.Known().Validate(cfg); err != nil {
		t.Fatal(err)
	}
	if err := config.Known().Validate(nil); err != nil {
		t.Fatal(err)
	}
}

// Every problem is in one error, sorted by key.
func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	err := config.Known().Validate(map[string]string{
		"python.fn-execution.bundle.sise":  "1000",
		"execution.checkpointing.interval": "often",
		"pipeline.forward-mismatch":        "rescale",
		"a.b":                              "c",
	})
	want := `invalid config, 3 problems:
  - unknown key "a.b": no key is close; known keys start with execution., job., jobmanager., metrics., pipeline., python., rest., restart-strategy., s3., table., web. (` + "`flinkgo config`" + ` lists them all)
  - execution.checkpointing.interval="often": expected a duration ("500 ms", "10 s", "1 min"; a bare number is milliseconds)
  - unknown key "python.fn-execution.bundle.sise": did you mean "python.fn-execution.bundle.size"?`
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
}

func TestEffectiveListsEveryKeyWithItsValue(t *testing.T) {
	r := config.Known()
	settings := r.Effective(map[string]string{"python.fn-execution.bundle.size": "1000", "execution.checkpointing.num-retained": "1"})
	if len(settings) != len(r.Keys()) {
		t.Fatalf("%d settings for %d keys", len(settings), len(r.Keys()))
	}
	seen := 0
	for i, s := range settings {
		if i > 0 && settings[i-1].Name >= s.Name {
			t.Errorf("not sorted: %s before %s", settings[i-1].Name, s.Name)
		}
		switch s.Name {
		case "python.fn-execution.bundle.size":
			seen++
			if s.Value != "1000" || !s.IsSet {
				t.Errorf("bundle size %+v", s)
			}
		case "execution.checkpointing.num-retained":
			seen++
			if s.Value != "1" || !s.IsSet { // set to its default is still set
				t.Errorf("num-retained %+v", s)
			}
		case "python.fn-execution.bundle.time":
			seen++
			if s.Value != "1 s" || s.IsSet {
				t.Errorf("bundle time %+v", s)
			}
		}
	}
	if seen != 3 {
		t.Errorf("saw %d of the 3 keys checked", seen)
	}
}

// A caller changing what it was given changes no registry.
func TestRegistriesAreIndependentValues(t *testing.T) {
	r := config.Known()
	keys := r.Keys()
	for i := range keys {
		keys[i].Default = "changed"
		if keys[i].Values != nil {
			keys[i].Values[0] = "changed"
		}
	}
	k, _ := r.Lookup("pipeline.forward-mismatch")
	k.Values[0] = "changed"
	for _, reg := range []config.Registry{r, config.Known()} {
		for _, k := range reg.Keys() {
			if k.Default == "changed" || (k.Values != nil && k.Values[0] == "changed") {
				t.Fatalf("%s changed through keys handed out", k.Name)
			}
		}
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"500": 500 * time.Millisecond, "500 ms": 500 * time.Millisecond, "10 s": 10 * time.Second, "10s": 10 * time.Second,
		"1 min": time.Minute, "2h": 2 * time.Hour, "1 d": 24 * time.Hour, "1.5 s": 1500 * time.Millisecond, "0.3 s": 300 * time.Millisecond, "0.57 min": 34200 * time.Millisecond, "0.7 min": 42 * time.Second,
		"1m30s": 90 * time.Second, " 0 ": 0,
		// Every unit label of Flink's TimeUtils.parseDuration, singular and plural.
		"2 d": 48 * time.Hour, "1 day": 24 * time.Hour, "2 days": 48 * time.Hour,
		"1 hour": time.Hour, "3 HOURS": 3 * time.Hour, "5 minute": 5 * time.Minute, "5 minutes": 5 * time.Minute,
		"10 sec": 10 * time.Second, "10 secs": 10 * time.Second, "1 second": time.Second, "30 seconds": 30 * time.Second,
		"7 milli": 7 * time.Millisecond, "7 millis": 7 * time.Millisecond, "250 millisecond": 250 * time.Millisecond,
		"250 milliseconds": 250 * time.Millisecond, "3 µs": 3 * time.Microsecond, "3 micro": 3 * time.Microsecond,
		"3 microseconds": 3 * time.Microsecond, "9 ns": 9, "9 nano": 9, "9 nanoseconds": 9, "5m": 5 * time.Minute,
	} {
		if got, err := config.ParseDuration(in); err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "-1", "-1 s", "1 fortnight", "inf s", "1 secondz", "99999999999 d", "1e3 ms", "s"} {
		if _, err := config.ParseDuration(in); err == nil {
			t.Errorf("ParseDuration(%q) succeeded", in)
		}
	}
}
