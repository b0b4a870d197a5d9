package rest

import (
	"net/http"
	"testing"
)

// GET /jobs/:jid/metrics-history (flinkgo's path) has each vertex's
// figures at the server's samplings, oldest first, and a vertex keeps its
// history through a rescale (its tasks change, its id does not).
func TestMetricsHistory(t *testing.T) {
	f := newFixture(t)
	jid, _ := f.submit(numbersPlan(t, 0, 1000))
	await(t, "the job to run", func() bool { return f.status(jid) == "RUNNING" })
	ids := f.vertexIDs(jid)
	sink := ids[len(ids)-1]
	type columns struct {
		ID         string     `json:"id"`
		Timestamps []int64    `json:"timestamps"`
		In         []float64  `json:"numRecordsInPerSecond"`
		Busy       []float64  `json:"busyTimeMsPerSecond"`
		Watermark  []*float64 `json:"currentInputWatermark"`
	}
	var history struct {
		Period   int64     `json:"periodMillis"`
		Capacity int       `json:"capacity"`
		Vertices []columns `json:"vertices"`
	}
	sinkHistory := func() columns {
		f.get("/jobs/"+jid+"/metrics-history", &history)
		for _, v := range history.Vertices {
			if v.ID == sink {
				return v
			}
		}
		t.Fatalf("no history of the sink %s: %+v", sink, history)
		return columns{}
	}
	var before columns
	await(t, "a sampled rate of the sink", func() bool {
		before = sinkHistory()
		return len(before.In) > 0 && before.In[len(before.In)-1] > 0
	})
	if history.Period != 1000 || history.Capacity != 300 || len(history.Vertices) != len(ids) {
		t.Errorf("history of %d vertices (want %d), period %d ms, capacity %d", len(history.Vertices), len(ids), history.Period, history.Capacity)
	}
	for i := 1; i < len(before.Timestamps); i++ {
		if before.Timestamps[i] <= before.Timestamps[i-1] {
			t.Errorf("timestamps not increasing: %v", before.Timestamps)
		}
	}
	if len(before.Busy) != len(before.Timestamps) || len(before.Watermark) != len(before.Timestamps) {
		t.Errorf("columns of different lengths: %+v", before)
	}

	path := "/jobs/" + jid + "/resource-requirements"
	if code := f.call("PUT", path, token, `{"`+sink+`": {"parallelism": {"lowerBound": 1, "upperBound": 3}}}`, nil); code != http.StatusOK {
		t.Fatalf("PUT upperBound 3: %d", code)
	}
	await(t, "the rescaled sink's rates in its history", func() bool {
		var vals []object
		f.get("/jobs/"+jid+"/vertices/"+sink+"/subtasks/metrics?get=numRecordsInPerSecond&agg=min", &vals)
		if len(vals) != 1 || vals[0]["min"].(float64) <= 0 {
			return false // not all three subtasks run yet
		}
		after := sinkHistory()
		return len(after.In) > len(before.In) && after.In[len(after.In)-1] > 0
	})
	if after := sinkHistory(); after.Timestamps[0] != before.Timestamps[0] {
		t.Errorf("the rescale lost the sink's history: it began at %d, now at %d", before.Timestamps[0], after.Timestamps[0])
	}
	if code := f.call("PATCH", "/jobs/"+jid+"?mode=cancel", token, "", nil); code != http.StatusAccepted {
		t.Fatalf("cancel: %d", code)
	}
	await(t, "the job to be canceled", func() bool { return f.status(jid) == "CANCELED" })
}
