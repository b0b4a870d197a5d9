package job

import (
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/runtime/config"
)

func TestRestartStrategies(t *testing.T) {
	cfg, err := config.Parse(map[string]string{
		config.ConfigRestartStrategy:           "exponential-delay",
		config.ConfigExponentialInitialBackoff: "100 ms",
		config.ConfigExponentialMaxBackoff:     "1 s",
		config.ConfigExponentialMultiplier:     "3",
		config.ConfigExponentialAttempts:       "5",
	})
	if err != nil {
		t.Fatal(err)
	}
	r := newRestarter(cfg.Restart)
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

	cfg, _ = config.Parse(map[string]string{config.ConfigRestartStrategy: "fixed-delay", config.ConfigFixedDelayAttempts: "2", config.ConfigFixedDelay: "2 s"})
	r = newRestarter(cfg.Restart)
	if !r.allow() || r.nextDelay() != 2*time.Second || !r.allow() || r.nextDelay() != 2*time.Second || r.allow() {
		t.Error("fixed-delay: want two restarts 2 s apart, then none")
	}

	// Flink's defaults: no restarts without checkpointing, exponential with.
	cfg, _ = config.Parse(nil)
	if newRestarter(cfg.Restart).allow() {
		t.Error("restarts without checkpointing")
	}
	cfg, _ = config.Parse(map[string]string{config.ConfigCheckpointInterval: "1 s", config.ConfigCheckpointDir: t.TempDir()})
	if cfg.Restart.Strategy != "exponential-delay" || !newRestarter(cfg.Restart).allow() {
		t.Errorf("with checkpointing the default is exponential-delay, got %+v", cfg.Restart)
	}
}
