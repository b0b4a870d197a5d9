package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// settingsFlag collects repeated -c key=value flags.
type settingsFlag map[string]string

func (s settingsFlag) String() string { return fmt.Sprint(map[string]string(s)) }

func (s settingsFlag) Set(v string) error {
	key, value, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(key) == "" {
		return fmt.Errorf("%q is not key=value", v)
	}
	s[strings.TrimSpace(key)] = value
	return nil
}

// showConfig prints every known configuration key with its effective
// value (the plan's, then -c's, else the default), whether it is the
// default, its type, reader and description; it fails when the config
// would fail a job.
func showConfig(args []string, out io.Writer) error {
	fs := newFlagSet("config", args)
	set := settingsFlag{}
	fs.Var(set, "c", "a config entry key=value (repeatable); it overrides the plan's")
	planFile := fs.String("plan", "", "a job plan (JobPlan protobuf, binary or JSON) whose config to show")
	_ = fs.Parse(args)
	if fs.NArg() > 0 {
		return fmt.Errorf("config takes no arguments, got %q (entries go as -c key=value)", fs.Args())
	}
	cfg := map[string]string{}
	if *planFile != "" {
		job, err := readPlan(*planFile)
		if err != nil {
			return err
		}
		for k, v := range job.GetConfig() {
			cfg[k] = v
		}
	}
	for k, v := range set {
		cfg[k] = v
	}
	known := config.Known()
	for _, s := range known.Effective(cfg) {
		var head string
		switch {
		case s.IsSet && s.Default != "":
			head = fmt.Sprintf("%s = %s  (set; default %s)", s.Name, s.Value, s.Default)
		case s.IsSet:
			head = fmt.Sprintf("%s = %s  (set)", s.Name, s.Value)
		case s.Default != "":
			head = fmt.Sprintf("%s = %s  (default)", s.Name, s.Value)
		default:
			head = s.Name + "  (unset)"
		}
		fmt.Fprintf(out, "%s\n    %s; read by %s\n    %s\n", head, s.Expected(), s.ReadBy, s.Description)
	}
	return known.Validate(cfg)
}

// readPlan reads a JobPlan written as binary protobuf or protojson.
func readPlan(path string) (*planpb.JobPlan, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	job := &planpb.JobPlan{}
	if bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		err = protojson.Unmarshal(data, job)
	} else {
		err = proto.Unmarshal(data, job)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a job plan (binary protobuf or JSON): %w", path, err)
	}
	return job, nil
}
