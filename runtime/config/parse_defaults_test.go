package config

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The defaults parseConfig applies are the registry's, so `flinkgo config`
// tells the truth about a key left unset.
func TestParseConfigDefaultsAreTheRegistrys(t *testing.T) {
	registered := func(name string) string {
		k, ok := Known().Lookup(name)
		if !ok {
			t.Fatalf("%s is read but not registered", name)
		}
		return k.Default
	}
	dur := func(name string) time.Duration {
		d, err := ParseDuration(registered(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return d
	}
	num := func(name string) int {
		n, err := strconv.Atoi(registered(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	parse := func(cfg map[string]string) runtimeConfig {
		c, err := parseConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := parse(nil)
	cp := c.checkpoint
	for _, check := range []struct {
		name     string
		got, def any
	}{
		{ConfigCheckpointInterval, cp.Interval, dur(ConfigCheckpointInterval)},
		{ConfigCheckpointDir, cp.Dir, registered(ConfigCheckpointDir)},
		{ConfigCheckpointsRetained, cp.Retained, num(ConfigCheckpointsRetained)},
		{ConfigCheckpointTimeout, cp.Timeout, dur(ConfigCheckpointTimeout)},
		{ConfigTolerableFailures, cp.TolerableFailures, num(ConfigTolerableFailures)},
		{ConfigCheckpointRetention, cp.RetainOnCancel, registered(ConfigCheckpointRetention) == RetainOnCancellation},
		{ConfigCreateDirsOnCheckpoint, strconv.FormatBool(cp.CreateDirsOnFirstCheckpoint), registered(ConfigCreateDirsOnCheckpoint)},
		{ConfigSavepointDir, cp.SavepointDir, registered(ConfigSavepointDir)},
		{ConfigUnalignedCheckpoints, strconv.FormatBool(cp.Unaligned), registered(ConfigUnalignedCheckpoints)},
		{ConfigRestorePath, c.restore.Path, registered(ConfigRestorePath)},
		{ConfigIgnoreUnclaimedState, strconv.FormatBool(c.restore.IgnoreUnclaimedState), registered(ConfigIgnoreUnclaimedState)},
		{ConfigUpdateInterval, c.updateInterval, dur(ConfigUpdateInterval)},
		{ConfigStateTTL, c.stateTTL, dur(ConfigStateTTL)},
		{ConfigAutoWatermarkInterval, c.watermarkInterval, dur(ConfigAutoWatermarkInterval)},
		{ConfigRestartStrategy, c.restart.Strategy, registered(ConfigRestartStrategy)},
		{ConfigExceptionHistorySize, c.exceptionHistorySize, num(ConfigExceptionHistorySize)},
	} {
		if check.got != check.def {
			t.Errorf("%s: parseConfig's default %v, the registry's %v", check.name, check.got, check.def)
		}
	}
	if c.bundleSize != 0 || c.bundleTime != 0 {
		t.Errorf("unset bundle keys must leave Options' settings: %d %v", c.bundleSize, c.bundleTime)
	}

	fixed := parse(map[string]string{ConfigRestartStrategy: "fixed-delay"}).restart
	if fixed.Attempts != num(ConfigFixedDelayAttempts) || fixed.Delay != dur(ConfigFixedDelay) {
		t.Errorf("fixed-delay defaults %+v", fixed)
	}
	exp := parse(map[string]string{ConfigRestartStrategy: "exponential-delay"}).restart
	mult, _ := strconv.ParseFloat(registered(ConfigExponentialMultiplier), 64)
	if exp.Attempts != num(ConfigExponentialAttempts) || exp.Delay != dur(ConfigExponentialInitialBackoff) ||
		exp.MaxBackoff != dur(ConfigExponentialMaxBackoff) || exp.Multiplier != mult {
		t.Errorf("exponential-delay defaults %+v", exp)
	}
}

// Start refuses a config with an unknown key or a bad value, naming both
// and the close match, each problem once.
func TestParseConfigRefusesUnknownKeysAndBadValues(t *testing.T) {
	_, err := parseConfig(map[string]string{
		"python.fn-execution.bundle.sise":    "1000",
		ConfigCheckpointsRetained:            "none",
		ConfigCheckpointInterval:             "1 s", // without a dir
		"restart-strategy.fixed-delay.tries": "3",
	})
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, want := range []string{
		`unknown key "python.fn-execution.bundle.sise": did you mean "python.fn-execution.bundle.size"?`,
		`execution.checkpointing.num-retained="none": expected an integer of at least 1`,
		`execution.checkpointing.interval is set but execution.checkpointing.dir is not`,
		`unknown key "restart-strategy.fixed-delay.tries"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("%s\nlacks %q", msg, want)
		}
	}
	if n := strings.Count(msg, "num-retained"); n != 1 {
		t.Errorf("num-retained reported %d times:\n%s", n, msg)
	}
}

// A job's bundle settings reach the runtime (Runtime's BundleSize and
// BundleTime, with which package job overrides its options); unset, they
// are zero, so the runtime's options stand.
func TestBundleKeysAreParsed(t *testing.T) {
	rt, err := Parse(map[string]string{ConfigBundleSize: "1000", ConfigBundleTime: "250 ms"})
	if err != nil {
		t.Fatal(err)
	}
	if rt.BundleSize != 1000 || rt.BundleTime != 250*time.Millisecond {
		t.Errorf("bundle %d %v, want the plan's 1000 250ms", rt.BundleSize, rt.BundleTime)
	}
	unset, _ := Parse(nil)
	if unset.BundleSize != 0 || unset.BundleTime != 0 {
		t.Errorf("unset keys gave bundle %d %v, want 0 0", unset.BundleSize, unset.BundleTime)
	}
}

// The parser writes no default of its own: a registry whose defaults
// differ gives a config without those keys the registry's values. (The
// parser once repeated each default beside the registry's, kept equal only
// by the test above.)
func TestParseConfigTakesEveryDefaultFromTheRegistry(t *testing.T) {
	changed := map[string]string{
		ConfigCheckpointTimeout:           "7 min",
		ConfigCheckpointsRetained:         "3",
		ConfigUpdateInterval:              "3 s",
		ConfigAutoWatermarkInterval:       "50 ms",
		ConfigWorkerIdleTimeout:           "5 s",
		ConfigWorkerMaxIdle:               "2",
		ConfigRescaleCooldown:             "1 s",
		ConfigAutoscalerTarget:            "0.5",
		ConfigAutoscalerMetricsWindow:     "2 min",
		ConfigExceptionHistorySize:        "4",
		ConfigUnalignedCheckpoints:        "true",
		ConfigExponentialMultiplier:       "2",
		ConfigRestartStrategy:             "exponential-delay",
		ConfigExponentialInitialBackoff:   "2 s",
		ConfigAutoscalerScaleDownInterval: "2 h",
	}
	keys := Known().Keys()
	for i, k := range keys {
		if d, ok := changed[k.Name]; ok {
			keys[i].Default = d
		}
	}
	c, err := parseConfigWith(newRegistry(keys), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, check := range []struct {
		name      string
		got, want any
	}{
		{ConfigCheckpointTimeout, c.checkpoint.Timeout, 7 * time.Minute},
		{ConfigCheckpointsRetained, c.checkpoint.Retained, 3},
		{ConfigUpdateInterval, c.updateInterval, 3 * time.Second},
		{ConfigAutoWatermarkInterval, c.watermarkInterval, 50 * time.Millisecond},
		{ConfigWorkerIdleTimeout, c.workerIdleTimeout, 5 * time.Second},
		{ConfigWorkerMaxIdle, c.workerMaxIdle, 2},
		{ConfigRescaleCooldown, c.rescale.Cooldown, time.Second},
		{ConfigAutoscalerTarget, c.autoscaler.Target, 0.5},
		{ConfigAutoscalerMetricsWindow, c.autoscaler.MetricsWindow, 2 * time.Minute},
		{ConfigAutoscalerScaleDownInterval, c.autoscaler.ScaleDownInterval, 2 * time.Hour},
		{ConfigExceptionHistorySize, c.exceptionHistorySize, 4},
		{ConfigUnalignedCheckpoints, c.checkpoint.Unaligned, true},
		{ConfigRestartStrategy, c.restart.Strategy, "exponential-delay"},
		{ConfigExponentialMultiplier, c.restart.Multiplier, 2.0},
		{ConfigExponentialInitialBackoff, c.restart.Delay, 2 * time.Second},
	} {
		if check.got != check.want {
			t.Errorf("%s: parsed %v, want the registry's default %v", check.name, check.got, check.want)
		}
	}
}

// Package bundle and the planner take their batch and bundle defaults
// from the registry through DefaultInt and DefaultDuration.
func TestTypedDefaultsReadTheRegistry(t *testing.T) {
	for _, name := range []string{ConfigBatchSize, ConfigBundleSize, ConfigWorkerMaxIdle} {
		k, _ := Known().Lookup(name)
		if got := DefaultInt(name); strconv.Itoa(got) != k.Default {
			t.Errorf("DefaultInt(%s) = %d, the registry says %s", name, got, k.Default)
		}
	}
	if got, want := DefaultDuration(ConfigBundleTime), time.Second; got != want {
		t.Errorf("DefaultDuration(%s) = %v, want %v", ConfigBundleTime, got, want)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "not registered") {
			t.Errorf("DefaultInt of an unregistered key: %v, want a panic naming it", r)
		}
	}()
	DefaultInt("python.fn-execution.bundle.sise")
}
