package config

import (
	"strings"
	"testing"
	"time"
)

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

// The message names what the user set, not a package of the runtime (it
// said "exec: invalid config: ..." after the package that was split).
func TestConfigErrorNamesTheConfigNotAPackage(t *testing.T) {
	_, err := Parse(map[string]string{ConfigCheckpointInterval: "1 s"})
	if err == nil || !strings.HasPrefix(err.Error(), "invalid config: ") {
		t.Errorf("error %q, want it to start with %q", err, "invalid config: ")
	}
}

func TestAutoscalerConfig(t *testing.T) {
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := AutoscalerConfig{Target: 0.7, Boundary: 0.3, Stabilization: 5 * time.Minute,
		MetricsWindow: 15 * time.Minute, ScaleDownInterval: time.Hour, CatchUpDuration: 5 * time.Minute}
	if c.Autoscaler != want {
		t.Fatalf("defaults %+v, want Flink's %+v", c.Autoscaler, want)
	}
	c, err = Parse(map[string]string{ConfigAutoscalerEnabled: "true", ConfigCheckpointInterval: "1 s", ConfigCheckpointDir: "/tmp/x",
		ConfigAutoscalerTarget: "0.5", ConfigAutoscalerMetricsWindow: "10 s", ConfigAutoscalerStabilization: "0 ms",
		ConfigAutoscalerCatchUpDuration: "30 s"})
	if err != nil || !c.Autoscaler.Enabled || c.Autoscaler.Target != 0.5 || c.Autoscaler.MetricsWindow != 10*time.Second || c.Autoscaler.Stabilization != 0 ||
		c.Autoscaler.CatchUpDuration != 30*time.Second {
		t.Fatalf("%+v %v", c.Autoscaler, err)
	}
	_, err = Parse(map[string]string{ConfigAutoscalerEnabled: "true"})
	if err == nil || !strings.Contains(err.Error(), "job.autoscaler.enabled needs execution.checkpointing.interval") {
		t.Fatalf("enabled without checkpoints: %v", err)
	}
	_, err = Parse(map[string]string{ConfigAutoscalerTarget: "1.5"})
	if err == nil || !strings.Contains(err.Error(), ConfigAutoscalerTarget) {
		t.Fatalf("target 1.5: %v", err)
	}
}

// web.exception-history-size bounds a job's exception history: an integer
// of at least 1 (the failure that ends a job is always kept), default 16.
func TestExceptionHistorySize(t *testing.T) {
	c, err := Parse(nil)
	if err != nil || c.ExceptionHistorySize != 16 {
		t.Fatalf("default %d %v, want Flink's 16", c.ExceptionHistorySize, err)
	}
	c, err = Parse(map[string]string{ConfigExceptionHistorySize: "3"})
	if err != nil || c.ExceptionHistorySize != 3 {
		t.Fatalf("3: %d %v", c.ExceptionHistorySize, err)
	}
	for _, bad := range []string{"0", "-1", "many", "2.5"} {
		_, err := Parse(map[string]string{ConfigExceptionHistorySize: bad})
		if err == nil || !strings.Contains(err.Error(), ConfigExceptionHistorySize) || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("%q: %v, want an error naming the key and its bound", bad, err)
		}
	}
}
