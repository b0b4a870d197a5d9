package builtin

import (
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flinkgo/flinkgo/runtime/connector"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

var schema = arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)

func TestPrintAndCollectHaveNoState(t *testing.T) {
	for _, s := range []*planpb.Sink{
		{Kind: &planpb.Sink_Print{Print: &planpb.PrintSink{}}},
		{Kind: &planpb.Sink_Collect{Collect: &planpb.CollectSink{}}},
	} {
		snk, err := Registry().Sink(s)
		if err != nil {
			t.Fatal(err)
		}
		if snk.CommitsAtCheckpoints() {
			t.Errorf("%v commits at checkpoints", s)
		}
		w, err := snk.Open(connector.WriterConfig{Schema: schema, Parallelism: 1, Stdout: &strings.Builder{},
			Collect: func(int, arrow.RecordBatch) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		st, err := w.PreCommit(1)
		if err != nil || len(st) != 0 {
			t.Errorf("%T: PreCommit = %q, %v", w, st, err)
		}
		if err := w.Commit(1); err != nil {
			t.Errorf("%T: Commit: %v", w, err)
		}
	}
}

// Every kind of the wire form's oneofs has its connector.
func TestEveryWireKindHasAConnector(t *testing.T) {
	r := Registry()
	src := (&planpb.Source{}).ProtoReflect().Descriptor().Oneofs().ByName("kind").Fields()
	for i := range src.Len() {
		kind := string(src.Get(i).Name())
		if kind == "connector" {
			continue
		}
		if !slices.Contains(r.SourceKinds(), kind) {
			t.Errorf("no source connector for the wire kind %q", kind)
		}
	}
	snk := (&planpb.Sink{}).ProtoReflect().Descriptor().Oneofs().ByName("kind").Fields()
	for i := range snk.Len() {
		kind := string(snk.Get(i).Name())
		if kind == "connector" {
			continue
		}
		if !slices.Contains(r.SinkKinds(), kind) {
			t.Errorf("no sink connector for the wire kind %q", kind)
		}
	}
}
