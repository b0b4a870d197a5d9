package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/internal/fuzzseeds"
	"github.com/flinkgo/flinkgo/runtime/proto/jobpb"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
)

// kafkaPlan reads topic t from servers and collects it; s3Endpoint, when
// set, is the job's s3.endpoint.
func kafkaPlan(servers, s3Endpoint string) *planpb.JobPlan {
	p := fuzzseeds.Plans()[0]
	p.Nodes[0].Kind = &planpb.Node_Source{Source: &planpb.Source{Kind: &planpb.Source_Kafka{Kafka: &planpb.KafkaSource{
		BootstrapServers: servers, Topics: []string{"t"}, BoundedLatest: true,
	}}}}
	if s3Endpoint != "" {
		p.Config = map[string]string{"s3.endpoint": s3Endpoint}
	}
	return p
}

// explainError plans p on s and returns the planning error, "" when it
// planned.
func explainError(t *testing.T, s *serveProcess, p *planpb.JobPlan) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	resp, err := jobpb.NewJobServiceClient(dialServe(t, s)).Explain(ctx, &jobpb.ExplainRequest{Plan: p})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetError()
}

// A `flinkgo serve` connects only to the Kafka bootstrap servers and S3
// endpoints its operator allowed (--allow-endpoint, $FLINKGO_ALLOW_ENDPOINT):
// a job naming another fails at planning, before anything connects, with
// the endpoint, the list and the flag in its error. Before, the server
// connected wherever a client said (its loopback, its private network, the
// metadata service's address).
func TestServeAllowsOnlyListedEndpoints(t *testing.T) {
	s := startServe(t, []string{"XDG_RUNTIME_DIR=" + t.TempDir(), AllowEndpointEnv + "="},
		"--allow-endpoint", "kafka.internal:9092", "--allow-endpoint", "https://minio.internal:9000")
	for _, c := range []struct {
		servers, s3, want string
	}{
		{"127.0.0.1:9092", "", `read_kafka "datagen" (node 1) names the bootstrap server "127.0.0.1:9092"`},
		{"kafka.internal:9092,10.1.2.3:9092", "", `"10.1.2.3:9092"`},
		{"kafka.internal:9092", "http://169.254.169.254", `s3.endpoint names the endpoint "http://169.254.169.254"`},
	} {
		got := explainError(t, s, kafkaPlan(c.servers, c.s3))
		if !strings.Contains(got, c.want) || !strings.Contains(got, "--allow-endpoint") || !strings.Contains(got, "kafka.internal:9092, https://minio.internal:9000") {
			t.Errorf("%s, s3.endpoint %q: %q; want a refusal with %s, the list and the flag", c.servers, c.s3, got, c.want)
		}
	}
	if got := explainError(t, s, kafkaPlan("kafka.internal:9092", "https://minio.internal:9000")); strings.Contains(got, "allow-endpoint") {
		t.Errorf("allowed endpoints were refused: %s", got)
	}

	// Without the flag none is allowed; the embedded runtime's "*" allows any.
	none := startServe(t, []string{"XDG_RUNTIME_DIR=" + t.TempDir(), AllowEndpointEnv + "="})
	if got := explainError(t, none, kafkaPlan("kafka.internal:9092", "")); !strings.Contains(got, "(allowed: no endpoint)") {
		t.Errorf("a server given no endpoint: %q", got)
	}
	anyEndpoint := startServe(t, []string{"XDG_RUNTIME_DIR=" + t.TempDir(), AllowEndpointEnv + "=*"})
	if got := explainError(t, anyEndpoint, kafkaPlan("127.0.0.1:9092", "http://127.0.0.1:9000")); strings.Contains(got, "allow-endpoint") {
		t.Errorf("%s=* refused an endpoint: %s", AllowEndpointEnv, got)
	}
}
