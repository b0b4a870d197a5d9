package logging

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestResolve(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		levelFlag, formatFlag string
		env                   map[string]string
		want                  Config
	}{
		{name: "defaults", want: Config{Level: DefaultLevel, Format: DefaultFormat}},
		{name: "flags", levelFlag: "debug", formatFlag: "json",
			want: Config{Level: slog.LevelDebug, Format: FormatJSON}},
		{name: "environment", env: map[string]string{LevelEnv: "error", FormatEnv: "JSON"},
			want: Config{Level: slog.LevelError, Format: FormatJSON}},
		{name: "flag wins over environment", levelFlag: "info", formatFlag: "text",
			env:  map[string]string{LevelEnv: "error", FormatEnv: "json"},
			want: Config{Level: slog.LevelInfo, Format: FormatText}},
		{name: "flag wins even over an invalid environment value", levelFlag: "warn",
			env:  map[string]string{LevelEnv: "loud"},
			want: Config{Level: slog.LevelWarn, Format: DefaultFormat}},
		{name: "one from each", levelFlag: "Debug", env: map[string]string{FormatEnv: "json"},
			want: Config{Level: slog.LevelDebug, Format: FormatJSON}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Resolve(tt.levelFlag, tt.formatFlag, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Resolve = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestResolveRejectsInvalidValuesNamingTheirSource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		levelFlag, formatFlag string
		env                   map[string]string
		want                  []string
	}{
		{name: "level flag", levelFlag: "verbose", want: []string{"--log-level", `"verbose"`, "debug, info, warn or error"}},
		{name: "format flag", formatFlag: "xml", want: []string{"--log-format", `"xml"`, "text or json"}},
		{name: "level env", env: map[string]string{LevelEnv: "trace"}, want: []string{"$" + LevelEnv, `"trace"`}},
		{name: "format env", env: map[string]string{FormatEnv: "yaml"}, want: []string{"$" + FormatEnv, `"yaml"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Resolve(tt.levelFlag, tt.formatFlag, env(tt.env))
			if err == nil {
				t.Fatal("Resolve accepted an invalid value")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestNewWritesTheChosenLevelAndFormat(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := New(&buf, Config{Level: slog.LevelInfo, Format: FormatJSON})
	l.Debug("hidden")
	l.Info("shown", "job", "j1")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON record: %v: %q", err, buf.String())
	}
	if rec["msg"] != "shown" || rec["job"] != "j1" || rec["level"] != "INFO" {
		t.Errorf("record = %v", rec)
	}

	buf.Reset()
	New(&buf, Config{Level: slog.LevelWarn, Format: FormatText}).Warn("careful", "n", 1)
	if got := buf.String(); !strings.Contains(got, `level=WARN msg=careful n=1`) {
		t.Errorf("text record = %q", got)
	}
}

func TestOrDiscard(t *testing.T) {
	t.Parallel()
	l := OrDiscard(nil)
	if l.Enabled(t.Context(), slog.LevelError) {
		t.Error("the logger for nil is enabled")
	}
	l.Error("dropped") // must not panic
	given := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	if OrDiscard(given) != given {
		t.Error("OrDiscard replaced a given logger")
	}
}
