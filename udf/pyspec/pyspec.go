// Package pyspec reads UDF declarations out of a Python file: it runs the
// file with the flinkgo package (`python -m flinkgo._specs`) and returns the
// UdfSpec of every UDF the file declares at top level, pickled by
// cloudpickle in that real Python process.
//
// Go programs that drive the bridge without the Python client (examples,
// tests, benchmarks) use it; pipelines get their specs inside the job plan.
package pyspec

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/flinkgo/flinkgo/udf/bridge/proto/workerpb"
)

// Declare runs file with python and returns its UDF specs by name.
func Declare(ctx context.Context, python, file string) (map[string]*workerpb.UdfSpec, error) {
	dir, err := os.MkdirTemp("", "flinkgo-specs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.CommandContext(ctx, python, "-m", "flinkgo._specs", file, dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pyspec: declaring the UDFs of %s with %s failed: %w\n%s(is the flinkgo package installed in that Python?)",
			file, python, err, stderr.String())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	specs := make(map[string]*workerpb.UdfSpec, len(entries))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		spec := &workerpb.UdfSpec{}
		if err := proto.Unmarshal(data, spec); err != nil {
			return nil, fmt.Errorf("pyspec: %s: %w", e.Name(), err)
		}
		specs[strings.TrimSuffix(e.Name(), ".pb")] = spec
	}
	return specs, nil
}
