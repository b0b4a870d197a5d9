package config

import (
	"strings"
	"testing"
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
