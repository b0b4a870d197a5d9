package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

	"github.com/flinkgo/flinkgo/runtime/job"
)

// bounds is FLIP-291's parallelism range of one vertex.
type bounds struct {
	LowerBound int `json:"lowerBound"`
	UpperBound int `json:"upperBound"`
}

// requirement is one vertex's entry of /jobs/:jid/resource-requirements.
type requirement struct {
	Parallelism bounds `json:"parallelism"`
}

// resourceRequirements answers FLIP-291's GET: each vertex's parallelism
// bounds, the upper bound being the parallelism it runs at; for a vertex
// that PUT resizes in place, the Python workers it runs (what a PUT of
// that upper bound asks for). A client that PUTs back what it read with
// one vertex changed (as Flink's tools do) so leaves the others as they
// run: an earlier in-place resize is not undone.
func (h *Handler) resourceRequirements(w http.ResponseWriter, r *http.Request) {
	info, ok := h.running(w, r)
	if !ok {
		return
	}
	out := map[string]requirement{}
	for _, v := range info.Job.Vertices() {
		upper := len(v.Tasks)
		if job.ResizableInPlace(v.Operators) {
			for _, op := range v.Operators {
				if job.HasWorkers(op) {
					upper = max(upper, info.Job.Workers(op.UID))
				}
			}
		}
		out[VertexID(v.Head.UID)] = requirement{Parallelism: bounds{LowerBound: 1, UpperBound: upper}}
	}
	writeJSON(w, http.StatusOK, out)
}

// setResourceRequirements is FLIP-291's PUT: the job rescales to each
// named vertex's upper bound (as Flink's adaptive scheduler does with
// enough slots) at its next completed checkpoint, through Job.Rescale; a
// vertex of stateless UDF operators asked for at least its subtasks runs
// that many Python workers in all instead, resized in place.
func (h *Handler) setResourceRequirements(w http.ResponseWriter, r *http.Request) {
	info, ok := h.running(w, r)
	if !ok {
		return
	}
	var req map[string]requirement
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("the body is not resource requirements ({\"<vertexid>\": {\"parallelism\": {\"lowerBound\": n, \"upperBound\": m}}}): %v", err))
		return
	}
	byID := map[string]job.Vertex{}
	for _, v := range info.Job.Vertices() {
		byID[VertexID(v.Head.UID)] = v
	}
	want, inPlace := map[string]int{}, map[string]int{}
	for _, vid := range slices.Sorted(maps.Keys(req)) {
		b := req[vid].Parallelism
		v, known := byID[vid]
		switch {
		case !known:
			writeError(w, http.StatusBadRequest, fmt.Sprintf("Job %s has no vertex %s (GET /jobs/%s/resource-requirements lists them)", info.ID, vid, info.ID))
			return
		case b.LowerBound < 1 || b.UpperBound < b.LowerBound:
			writeError(w, http.StatusBadRequest, fmt.Sprintf("vertex %s (%s): bounds %d..%d: want 1 <= lowerBound <= upperBound", vid, v.Head.Name, b.LowerBound, b.UpperBound))
			return
		}
		// A chain of stateless operators with Python workers keeps its
		// subtasks and runs upperBound workers in all (in place); any other
		// chain runs at one parallelism: every operator of it moves.
		if job.ResizableInPlace(v.Operators) && b.UpperBound >= v.Head.Parallelism {
			for _, op := range v.Operators {
				if job.HasWorkers(op) {
					inPlace[op.UID] = b.UpperBound
				}
			}
			continue
		}
		for _, op := range v.Operators {
			want[op.UID] = b.UpperBound
		}
	}
	if len(want)+len(inPlace) == 0 {
		writeError(w, http.StatusBadRequest, "the resource requirements name no vertex")
		return
	}
	for _, rescale := range []func() error{
		func() error { _, err := info.Job.RescaleThroughCheckpoint(want); return err },
		func() error {
			if len(inPlace) == 0 {
				return nil
			}
			_, err := info.Job.Rescale(inPlace)
			return err
		},
	} {
		if err := rescale(); err != nil {
			code := http.StatusInternalServerError
			if errors.Is(err, job.ErrRescaleRefused) {
				code = http.StatusBadRequest
			}
			writeError(w, code, err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{})
}
