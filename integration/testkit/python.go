package testkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
	"github.com/flinkgo/flinkgo/udf/pyspec"
)

// RepoRoot is the directory holding go.mod, found from the working directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testkit: no go.mod above the working directory")
		}
		dir = parent
	}
}

// PythonEnv names the interpreter tests use; RequirePythonEnv, set to 1 (as
// `make test` does), makes a test that needs Python fail when none is found
// instead of skipping.
const (
	PythonEnv        = "FLINKGO_PYTHON"
	RequirePythonEnv = "FLINKGO_REQUIRE_PYTHON"
)

// Python returns the interpreter that has the flinkgo package: $FLINKGO_PYTHON,
// else the repository's .venv (which `make setup` creates). Without one the
// test is skipped with a message saying how to run it, or fails when
// $FLINKGO_REQUIRE_PYTHON is 1. Every Go test that needs Python finds it here.
func Python(t testing.TB) string {
	t.Helper()
	p := os.Getenv(PythonEnv)
	if p == "" {
		p = filepath.Join(RepoRoot(t), ".venv", "bin", "python")
	}
	if err := hasFlinkgo(p); err != nil {
		msg := fmt.Sprintf("testkit: this test needs a Python with the flinkgo package: %v.\n"+
			"Run `make setup` once (it creates .venv), or set %s to such an interpreter; "+
			"`make test` runs these tests and fails without one (%s=1).", err, PythonEnv, RequirePythonEnv)
		if os.Getenv(RequirePythonEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

var probes sync.Map // interpreter path -> error of its probe (nil when fine)

// hasFlinkgo checks, once per path, that python runs and finds the flinkgo
// package (without importing it: that loads pyarrow and takes a while).
func hasFlinkgo(python string) error {
	if err, ok := probes.Load(python); ok {
		return errOrNil(err)
	}
	var err error
	if _, statErr := os.Stat(python); statErr != nil && filepath.IsAbs(python) {
		err = fmt.Errorf("%s does not exist", python)
	} else {
		out, runErr := exec.Command(python, "-c",
			"import importlib.util, sys; sys.exit(importlib.util.find_spec('flinkgo') is None)").CombinedOutput()
		if runErr != nil {
			err = fmt.Errorf("%s does not find the flinkgo package (%v)", python, runErr)
			if detail := strings.TrimSpace(string(out)); detail != "" {
				err = fmt.Errorf("%w: %s", err, detail)
			}
		}
	}
	probes.Store(python, err)
	return err
}

func errOrNil(v any) error {
	if v == nil {
		return nil
	}
	return v.(error)
}

// UDFSpecs runs src (Python declaring UDFs with flinkgo.udf) as a script
// and returns the spec of every UDF it declares, by name.
func UDFSpecs(t testing.TB, src string) map[string]*workerpb.UdfSpec {
	t.Helper()
	script := filepath.Join(t.TempDir(), "udfs.py")
	if err := os.WriteFile(script, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	specs, err := pyspec.Declare(context.Background(), Python(t), script)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

// Call applies spec to the named argument columns, producing output.
func Call(spec *workerpb.UdfSpec, output string, args ...string) *workerpb.UdfCall {
	return &workerpb.UdfCall{Udf: spec, Args: args, Output: output}
}

// planFooter writes the module's `plan` (a JobPlan) to $FLINKGO_TEST_DIR.
const planFooter = `

import os as _os
with open(_os.path.join(_os.environ["FLINKGO_TEST_DIR"], "plan.pb"), "wb") as _f:
    _f.write(plan.to_bytes())
`

// JobPlan runs src, Python that builds a pipeline with the flinkgo API and
// assigns `plan = env.plan(...)`, with $FLINKGO_TEST_DIR set to dir (where
// it may also write what it expects, computed with pandas), and returns the
// plan.
func JobPlan(t testing.TB, src, dir string) *planpb.JobPlan {
	t.Helper()
	script := filepath.Join(dir, "pipeline.py")
	if err := os.WriteFile(script, []byte(src+planFooter), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(Python(t), script)
	cmd.Env = append(os.Environ(), "FLINKGO_TEST_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("testkit: building the plan failed: %v\n%s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(dir, "plan.pb"))
	if err != nil {
		t.Fatal(err)
	}
	job := &planpb.JobPlan{}
	if err := proto.Unmarshal(data, job); err != nil {
		t.Fatal(err)
	}
	return job
}
