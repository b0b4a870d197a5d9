package objstore_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flinkgo/flinkgo/internal/objstore"
)

// A client without credentials from the job, the environment or the shared
// files never asks the EC2 instance metadata service for the instance's
// role unless InstanceMetadata says so (before, the SDK's default chain
// asked it: a job borrowed the server's role). The metadata service here is
// a local stand-in at AWS_EC2_METADATA_SERVICE_ENDPOINT that counts calls.
func TestS3AsksInstanceMetadataOnlyWhenEnabled(t *testing.T) {
	var calls atomic.Int64
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "no role here", http.StatusNotFound)
	}))
	defer imds.Close()
	empty := filepath.Join(t.TempDir(), "none")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_EC2_METADATA_DISABLED",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", empty)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", empty)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", imds.URL)
	// An S3 endpoint nothing listens on: credentials are resolved before
	// any request is sent.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + l.Addr().String()
	l.Close()

	for _, enabled := range []bool{false, true} {
		calls.Store(0)
		s, err := objstore.NewS3(t.Context(), objstore.Options{Endpoint: endpoint, Region: "us-east-1", PathStyle: true, InstanceMetadata: enabled})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.List(t.Context(), "s3://bkt/p/")
		if err == nil {
			t.Fatalf("InstanceMetadata %v: listing without credentials succeeded", enabled)
		}
		switch {
		case !enabled && calls.Load() != 0:
			t.Errorf("the client asked the instance metadata service %d times without InstanceMetadata", calls.Load())
		case !enabled && !strings.Contains(err.Error(), "s3.credentials.instance-metadata"):
			t.Errorf("the error does not say how to get credentials: %v", err)
		case enabled && calls.Load() == 0:
			t.Errorf("with InstanceMetadata the client did not ask the metadata service: %v", err)
		}
	}
}
