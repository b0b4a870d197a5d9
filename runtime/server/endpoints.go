package server

import (
	"fmt"
	"strings"

	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/server/allowendpoint"
)

// AllowEndpoints restricts the network endpoints that clients name (Kafka
// bootstrap servers, s3.endpoint) to list; call it before serving. A
// server that was not given a list allows any endpoint.
func (s *Server) AllowEndpoints(list *allowendpoint.List) { s.endpointsAllowed = list }

// checkEndpoints checks every endpoint of a plan: its Kafka sources' and
// sinks' bootstrap servers and its s3.endpoint. A job that names none
// (S3 at AWS, or at the server's own AWS_ENDPOINT_URL_S3) needs no entry.
func (s *Server) checkEndpoints(job *planpb.JobPlan) error {
	list := s.endpointsAllowed
	if list == nil || list.AllowsAny() {
		return nil
	}
	if ep := strings.TrimSpace(job.GetConfig()[config.ConfigS3Endpoint]); ep != "" {
		if err := list.Check("the config entry "+config.ConfigS3Endpoint+" names the endpoint", ep); err != nil {
			return err
		}
	}
	for _, n := range job.GetNodes() {
		servers, what := "", ""
		if k := n.GetSource().GetKafka(); k != nil {
			servers, what = k.GetBootstrapServers(), "read_kafka"
		}
		if k := n.GetSink().GetKafka(); k != nil {
			servers, what = k.GetBootstrapServers(), "write_kafka"
		}
		for _, server := range strings.Split(servers, ",") {
			if strings.TrimSpace(server) == "" {
				continue // the source or sink says the list is malformed
			}
			if err := list.Check(fmt.Sprintf("%s %q (node %d) names the bootstrap server", what, n.GetName(), n.GetId()), server); err != nil {
				return err
			}
		}
	}
	return nil
}
