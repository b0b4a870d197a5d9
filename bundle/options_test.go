package bundle

import (
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/udf/bridge"
	"github.com/flinkgo/flinkgo/udf/bridge/bridgetest"
)

func TestOptionsDefaults(t *testing.T) {
	in := Options{Name: "op"}
	got := in.withDefaults()
	if !sameScalars(in, Options{Name: "op"}) || in.Allocator != nil || in.Executor != nil || in.Now != nil {
		t.Fatalf("withDefaults modified its receiver: %+v", in)
	}
	if got.BatchSize != 10000 || got.BundleSize != 100000 || got.BundleTime.Seconds() != 1 ||
		got.MaxBatchBytes != 16<<20*9/10 || got.Allocator == nil || got.Executor == nil || got.Now == nil {
		t.Fatalf("defaults: %+v", got)
	}
	if err := got.validate(); err != nil {
		t.Fatal(err)
	}
	if got.batchRows() != 10000 {
		t.Fatalf("effective batch size %d, want 10000", got.batchRows())
	}
}

func TestNewOperatorReportsEveryProblem(t *testing.T) {
	opts := Options{BatchSize: -1, BundleSize: -2, BundleTime: -3, MaxBatchBytes: -4}
	saved := opts
	_, err := NewOperator(opts, bridgetest.NewRunner(nil), func(bridge.Result) error { return nil })
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"Name is empty", "BatchSize is -1", "BundleSize is -2", "BundleTime is -3ns", "MaxBatchBytes is -4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if !sameScalars(opts, saved) || opts.Executor != nil || opts.Allocator != nil || opts.Now != nil {
		t.Fatalf("NewOperator modified the caller's options: %+v", opts)
	}
}

func TestNewOperatorNeedsRunnerAndEmit(t *testing.T) {
	if _, err := NewOperator(Options{Name: "op"}, nil, func(bridge.Result) error { return nil }); err == nil {
		t.Error("nil runner accepted")
	}
	if _, err := NewOperator(Options{Name: "op"}, bridgetest.NewRunner(nil), nil); err == nil {
		t.Error("nil emit accepted")
	}
}

// sameScalars compares the fields of Options that can be compared.
func sameScalars(a, b Options) bool {
	return a.Name == b.Name && a.BatchSize == b.BatchSize && a.BundleSize == b.BundleSize &&
		a.BundleTime == b.BundleTime && a.MaxBatchBytes == b.MaxBatchBytes
}
