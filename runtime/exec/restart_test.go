package exec

import (
	"strings"
	"testing"
	"time"
)

func TestRestartStrategies(t *testing.T) {
	cfg, err := parseConfig(map[string]string{
		ConfigRestartStrategy:           "exponential-delay",
		ConfigExponentialInitialBackoff: "100 ms",
		ConfigExponentialMaxBackoff:     "1 s",
		ConfigExponentialMultiplier:     "3",
		ConfigExponentialAttempts:       "5",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := newRestarter(cfg.restart)
	var delays []time.Duration
	for r.allow() {
		delays = append(delays, r.nextDelay())
	}
	want := []time.Duration{100 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond, time.Second, time.Second}
	if len(delays) != len(want) {
		t.Fatalf("delays %v, want %v", delays, want)
	}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}

	cfg, _ = parseConfig(map[string]string{ConfigRestartStrategy: "fixed-delay", ConfigFixedDelayAttempts: "2", ConfigFixedDelay: "2 s"})
	r = newRestarter(cfg.restart)
	if !r.allow() || r.nextDelay() != 2*time.Second || !r.allow() || r.nextDelay() != 2*time.Second || r.allow() {
		t.Error("fixed-delay: want two restarts 2 s apart, then none")
	}

	// Flink's defaults: no restarts without checkpointing, exponential with.
	cfg, _ = parseConfig(nil)
	if newRestarter(cfg.restart).allow() {
		t.Error("restarts without checkpointing")
	}
	cfg, _ = parseConfig(map[string]string{ConfigCheckpointInterval: "1 s", ConfigCheckpointDir: t.TempDir()})
	if cfg.restart.Strategy != "exponential-delay" || !newRestarter(cfg.restart).allow() {
		t.Errorf("with checkpointing the default is exponential-delay, got %+v", cfg.restart)
	}
}

func TestConfigErrorsNameEveryProblem(t *testing.T) {
	_, err := parseConfig(map[string]string{
		ConfigCheckpointInterval:  "soon",
		ConfigCheckpointsRetained: "0",
		ConfigRestartStrategy:     "sometimes",
	})
	for _, want := range []string{ConfigCheckpointInterval, ConfigCheckpointsRetained, ConfigRestartStrategy, `"500 ms"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	_, err = parseConfig(map[string]string{ConfigCheckpointInterval: "1 s"})
	if err == nil || !strings.Contains(err.Error(), ConfigCheckpointDir) {
		t.Errorf("an interval without a directory: %v", err)
	}
}
