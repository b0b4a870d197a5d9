package connector

import (
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

func TestSourceAndSinkKindsAreTheWireFieldsOrTheConnectorKind(t *testing.T) {
	for _, tc := range []struct {
		wire *planpb.Source
		want string
	}{
		{&planpb.Source{Kind: &planpb.Source_Kafka{Kafka: &planpb.KafkaSource{}}}, "kafka"},
		{&planpb.Source{Kind: &planpb.Source_Arrow{Arrow: &planpb.ArrowSource{}}}, "arrow"},
		{&planpb.Source{Kind: &planpb.Source_Connector{Connector: &planpb.ConnectorSource{Kind: "nats"}}}, "nats"},
		{&planpb.Source{}, ""},
	} {
		if got := SourceKind(tc.wire); got != tc.want {
			t.Errorf("SourceKind(%v) = %q, want %q", tc.wire, got, tc.want)
		}
	}
	if got := SinkKind(&planpb.Sink{Kind: &planpb.Sink_File{File: &planpb.FileSink{}}}); got != "file" {
		t.Errorf("SinkKind(file) = %q", got)
	}
	if got := SinkKind(&planpb.Sink{Kind: &planpb.Sink_Connector{Connector: &planpb.ConnectorSink{Kind: "iceberg"}}}); got != "iceberg" {
		t.Errorf("SinkKind(connector) = %q", got)
	}
}

func TestRegistryRefusesDuplicatesAndNamesWhatItHas(t *testing.T) {
	decode := func(*planpb.Source) (Source, error) { return nil, nil }
	if _, err := NewRegistry([]SourceConnector{{Kind: "a", Decode: decode}, {Kind: "a", Decode: decode}}, nil); err == nil {
		t.Error("a kind registered twice was accepted")
	}
	if _, err := NewRegistry([]SourceConnector{{Kind: "a"}}, nil); err == nil {
		t.Error("a connector without Decode was accepted")
	}
	r, err := NewRegistry([]SourceConnector{{Kind: "kafka", Decode: decode}, {Kind: "datagen", Decode: decode}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Source(&planpb.Source{Kind: &planpb.Source_Connector{Connector: &planpb.ConnectorSource{Kind: "nats"}}})
	if err == nil || !strings.Contains(err.Error(), `no source connector "nats" in this runtime (it has datagen, kafka)`) {
		t.Errorf("unknown kind: %v", err)
	}
	_, err = r.Sink(&planpb.Sink{Kind: &planpb.Sink_Print{Print: &planpb.PrintSink{}}})
	if err == nil || !strings.Contains(err.Error(), `no sink connector "print"`) {
		t.Errorf("unknown sink kind: %v", err)
	}
	// With replaces a kind and keeps the others; r is unchanged.
	replaced := func(*planpb.Source) (Source, error) { return nil, errReplaced }
	w, err := r.With([]SourceConnector{{Kind: "kafka", Decode: replaced}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kafka := &planpb.Source{Kind: &planpb.Source_Kafka{Kafka: &planpb.KafkaSource{}}}
	if _, err := w.Source(kafka); err != errReplaced {
		t.Errorf("With did not replace kafka: %v", err)
	}
	if _, err := r.Source(kafka); err != nil {
		t.Errorf("With changed the original: %v", err)
	}
	if _, err := w.Source(&planpb.Source{Kind: &planpb.Source_Datagen{Datagen: &planpb.DatagenSource{}}}); err != nil {
		t.Errorf("With dropped datagen: %v", err)
	}
}

var errReplaced = errorString("replaced")

type errorString string

func (e errorString) Error() string { return string(e) }
