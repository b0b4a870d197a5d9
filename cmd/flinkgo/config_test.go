package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

func TestConfigPrintsEveryKeyWithItsEffectiveValue(t *testing.T) {
	job := &planpb.JobPlan{Name: "j", Config: map[string]string{
		"python.fn-execution.bundle.size":  "1000",
		"execution.checkpointing.interval": "10 s",
	}}
	dir := t.TempDir()
	bin, err := proto.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	js, err := protojson.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"plan.pb": bin, "plan.json": js} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			// -c overrides the plan's entry.
			if err := showConfig([]string{"--plan", path, "-c", "execution.checkpointing.interval=1 min"}, &out); err != nil {
				t.Fatal(err)
			}
			text := out.String()
			for _, want := range []string{
				"python.fn-execution.bundle.size = 1000  (set; default 100000)\n    an integer of at least 1; read by runtime/operators: UDF operators",
				"execution.checkpointing.interval = 1 min  (set; default 0 ms)",
				"python.fn-execution.bundle.time = 1 s  (default)",
				"execution.checkpointing.dir  (unset)\n    a path; read by runtime/checkpoint: checkpoint coordinator\n    Checkpoint storage",
			} {
				if !strings.Contains(text, want) {
					t.Errorf("output lacks %q:\n%s", want, text)
				}
			}
			for _, k := range config.Known().Keys() {
				if !strings.Contains(text, "\n"+k.Name+" ") && !strings.HasPrefix(text, k.Name+" ") {
					t.Errorf("output lacks %s", k.Name)
				}
			}
		})
	}
}

func TestConfigFailsOnWhatWouldFailAJob(t *testing.T) {
	var out bytes.Buffer
	err := showConfig([]string{"-c", "python.fn-execution.bundle.sise=1000"}, &out)
	if err == nil || !strings.Contains(err.Error(), `did you mean "python.fn-execution.bundle.size"?`) {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(out.String(), "python.fn-execution.bundle.size = 100000  (default)") {
		t.Errorf("the known keys are still printed:\n%s", out.String())
	}
	if err := showConfig([]string{"--plan", filepath.Join(t.TempDir(), "missing.pb")}, &out); err == nil {
		t.Error("a missing plan file is not an error")
	}
}

// A credential set in the configuration is never printed, as Flink hides
// its sensitive keys; the key still shows that it is set.
func TestConfigHidesSecrets(t *testing.T) {
	var out bytes.Buffer
	if err := showConfig([]string{"-c", "s3.secret-key=hunter2", "-c", "s3.access-key=AKIDEXAMPLE"}, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if strings.Contains(text, "hunter2") || strings.Contains(text, "AKIDEXAMPLE") {
		t.Errorf("a credential's value is printed:\n%s", text)
	}
	for _, want := range []string{"s3.secret-key = ******  (set)", "s3.access-key = ******  (set)"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}
