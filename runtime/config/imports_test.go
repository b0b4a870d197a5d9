package config

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsOnlyStandardLibrary holds ARCHITECTURE.md's rule for this
// package: every package a config reader pulls in (the runtime's watermark
// and job code among them) would otherwise carry what it imports, as the
// AWS SDK once came in through internal/objstore.
func TestImportsOnlyStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg != "github.com/flinkgo/flinkgo/runtime/config" {
			t.Errorf("runtime/config depends on %s; it must import only the standard library", pkg)
		}
	}
}

func TestS3OptionsFromConfig(t *testing.T) {
	rt, err := Parse(map[string]string{
		ConfigS3Endpoint: "http://127.0.0.1:9000", ConfigS3Region: "eu-west-1",
		ConfigS3AccessKey: "a", ConfigS3SecretKey: "s", ConfigS3PathStyle: "true",
	})
	if err != nil {
		t.Fatal(err)
	}
	want := S3Options{Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", AccessKey: "a", SecretKey: "s", PathStyle: true}
	if !rt.Checkpoint.S3Set || rt.Checkpoint.S3 != want {
		t.Fatalf("S3 = %+v (set %v), want %+v", rt.Checkpoint.S3, rt.Checkpoint.S3Set, want)
	}
}
