package testkit

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/flinkgo/flinkgo/udf/proto/workerpb"
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

// Python returns the interpreter that has the flinkgo package: $FLINKGO_PYTHON,
// else the repository's .venv (which .ci/run creates).
func Python(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FLINKGO_PYTHON"); p != "" {
		return p
	}
	p := filepath.Join(RepoRoot(t), ".venv", "bin", "python")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("testkit: no Python with flinkgo: set FLINKGO_PYTHON or run .ci/run once to create %s", p)
	}
	return p
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
