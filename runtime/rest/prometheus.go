package rest

import (
	"net/http"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flinkgo/flinkgo/runtime/job"
	"github.com/flinkgo/flinkgo/runtime/metrics"
	"github.com/flinkgo/flinkgo/runtime/server"
)

// Prometheus metric names follow Flink's Prometheus reporter: the scope
// joined by "_" ("flink_taskmanager_job_task_" + the task metric), the
// scope's variables as labels; counters are exposed as gauges, as Flink
// does.
const (
	taskScope     = "flink_taskmanager_job_task_"
	operatorScope = "flink_taskmanager_job_task_operator_"
	jobScope      = "flink_jobmanager_job_"
)

var (
	taskLabels     = []string{"job_id", "job_name", "task_id", "task_name", "subtask_index"}
	operatorLabels = []string{"job_id", "job_name", "task_id", "task_name", "operator_id", "operator_name"}
	// udfLabels: UDF metrics are per operator subtask, as Flink's
	// operator scope.
	udfLabels = append(slices.Clone(operatorLabels), "subtask_index")
	jobLabels = []string{"job_id", "job_name"}
)

// collector reads the running jobs' metrics at each scrape.
type collector struct {
	srv   *server.Server
	descs map[string]*prometheus.Desc
}

func newCollector(srv *server.Server) *collector {
	c := &collector{srv: srv, descs: map[string]*prometheus.Desc{}}
	for _, n := range metrics.TaskMetricNames {
		c.descs[taskScope+n] = prometheus.NewDesc(taskScope+n, "Flink task metric "+n+" of one subtask.", taskLabels, nil)
	}
	for n, help := range map[string]string{
		"numRecordsIn": "Rows the operator took in, over its subtasks.", "numRecordsOut": "Rows the operator gave out, over its subtasks.",
		"numLateRecordsDropped": "Rows a window aggregation dropped as too late.",
	} {
		c.descs[operatorScope+n] = prometheus.NewDesc(operatorScope+n, help, operatorLabels, nil)
	}
	for n, help := range udfHelp {
		c.descs[operatorScope+n] = prometheus.NewDesc(operatorScope+n, help, udfLabels, nil)
	}
	for n, help := range map[string]string{
		"uptime":                       "Milliseconds since the job started.",
		"numRestarts":                  "Restarts of the job (attempts after the first).",
		"numberOfCompletedCheckpoints": "Checkpoints and savepoints completed.",
		"numberOfFailedCheckpoints":    "Checkpoints and savepoints that failed or were aborted.",
		"lastCheckpointDuration":       "Milliseconds the latest completed checkpoint took.",
		"lastCheckpointSize":           "Bytes of the latest completed checkpoint.",
	} {
		c.descs[jobScope+n] = prometheus.NewDesc(jobScope+n, help, jobLabels, nil)
	}
	return c
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	for _, info := range c.srv.Jobs() {
		if info.Job == nil || info.State.Terminal() {
			continue
		}
		j := info.Job
		gauge(jobScope+"uptime", float64(duration(info)), info.ID, info.Name)
		gauge(jobScope+"numRestarts", float64(max(0, j.Attempts()-1)), info.ID, info.Name)
		var done, failed float64
		var last *job.CheckpointStats
		for _, s := range j.Checkpoints() {
			if s.Status == "completed" {
				done++
				last = &s
			} else {
				failed++
			}
		}
		gauge(jobScope+"numberOfCompletedCheckpoints", done, info.ID, info.Name)
		gauge(jobScope+"numberOfFailedCheckpoints", failed, info.ID, info.Name)
		if last != nil {
			gauge(jobScope+"lastCheckpointDuration", float64(last.Duration.Milliseconds()), info.ID, info.Name)
			gauge(jobScope+"lastCheckpointSize", float64(max(last.Size, 0)), info.ID, info.Name)
		}
		counts := j.Snapshot()
		for _, v := range j.Vertices() {
			vid, vname := VertexID(v.Head.UID), vertexName(v)
			for i := range v.Tasks {
				m := taskMetrics(info, v, i)
				for _, n := range metrics.TaskMetricNames {
					gauge(taskScope+n, m[n], info.ID, info.Name, vid, vname, strconv.Itoa(i))
				}
			}
			for _, op := range v.Operators {
				om := counts.Operators[op.ID]
				labels := []string{info.ID, info.Name, vid, vname, VertexID(op.UID), op.Name}
				gauge(operatorScope+"numRecordsIn", float64(om.RowsIn), labels...)
				gauge(operatorScope+"numRecordsOut", float64(om.RowsOut), labels...)
				gauge(operatorScope+"numLateRecordsDropped", float64(om.LateRecordsDropped), labels...)
			}
			for _, u := range v.UDFs {
				for i, sub := range u.Subtasks {
					labels := []string{info.ID, info.Name, vid, vname, VertexID(u.Op.UID), u.Op.Name, strconv.Itoa(i)}
					for n, x := range sub.Values() {
						gauge(operatorScope+n, x, labels...)
					}
				}
			}
		}
	}
}

// udfHelp describes the UDF metrics (metrics.UDFMetricNames).
var udfHelp = map[string]string{
	metrics.UDFNumBatches:            "Batches the UDF operator subtask sent to its Python workers.",
	metrics.UDFNumRecords:            "Rows the UDF operator subtask sent to its Python workers.",
	metrics.UDFAccumulatedWorkerTime: "Milliseconds the Python workers spent on the batches they answered.",
	metrics.UDFWorkerTimeMsPerBatch:  "Mean milliseconds a Python worker spent on one batch.",
	metrics.UDFBatchesInFlight:       "Batches sent to the Python workers and not answered yet.",
	metrics.UDFWorkerRssBytes:        "Resident memory of the subtask's Python workers, in bytes (sampled from /proc at most once a second).",
	metrics.UDFNumWorkerRestarts:     "Python workers a restart of the job replaced.",
}

// NewPrometheusHandler serves the running jobs' metrics in Prometheus's
// exposition format (the official client's registry and encoder), as
// Flink's Prometheus reporter names them.
func NewPrometheusHandler(srv *server.Server) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(srv))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
