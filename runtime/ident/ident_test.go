package ident

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
)

// A logger given a subtask writes its attributes inline, under the same
// keys whatever the handler, and an error names it as TaskError does.
func TestSubtaskLogsItsIdentityInline(t *testing.T) {
	var buf bytes.Buffer
	id := Subtask{Job: "j1", Attempt: 2, Vertex: 3, Operator: "agg", UID: "sums", Index: 1}
	slog.New(slog.NewJSONHandler(&buf, nil)).With(Attr(id)).Info("task finished")
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"job": "j1", "attempt": 2.0, "vertex": 3.0, "operator": "agg", "uid": "sums", "subtask": 1.0}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v (record %s)", k, rec[k], v, buf.String())
		}
	}
	buf.Reset()
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", Attr(Subtask{Operator: "map", UID: "m", Index: 0}))
	if got := buf.String(); bytes.Contains(buf.Bytes(), []byte("job=")) || !bytes.Contains(buf.Bytes(), []byte("operator=map uid=m subtask=0")) {
		t.Errorf("without a job: %s", got)
	}
	if got, want := id.String(), `operator "agg" (uid sums, subtask 1)`; got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
}
