package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
	"github.com/flinkgo/flinkgo/runtime/server/allowpath"
)

// A file source's directory checked against the server's allowed roots,
// then swapped for a link to /etc-like files before the source opens it
// (issue 29, item 5): every format opens its files from the allowed root
// and refuses the link, naming the file and the rule; os.Open by name read
// the file the link led to.
func TestAFileSourceRefusesALinkSwappedInAfterTheCheck(t *testing.T) {
	base := t.TempDir()
	root, secret := filepath.Join(base, "allowed"), filepath.Join(base, "secret")
	data := filepath.Join(root, "data")
	for _, d := range []string{data, secret} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rows := "sensor,temp,site\n1,2.5,a\n"
	for _, d := range []string{data, secret} {
		if err := os.WriteFile(filepath.Join(d, "in.csv"), []byte(rows), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roots, err := allowpath.New([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(data, "in.csv")
	if err := roots.Check("the file source", path); err != nil {
		t.Fatal(err)
	}
	read := func() error {
		mem := checked(t)
		r, err := Open(fileSource(planpb.FileSource_CSV, path), Config{Schema: readings, Parallelism: 1, Allocator: mem, Paths: roots})
		if err != nil {
			return err
		}
		defer r.Close()
		batches, err := ReadAll(context.Background(), r)
		for _, b := range batches {
			b.Release()
		}
		return err
	}
	if err := read(); err != nil {
		t.Fatalf("before the swap: %v", err)
	}
	if err := os.Rename(data, data+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, data); err != nil {
		t.Fatal(err)
	}
	err = read()
	if err == nil {
		t.Fatal("the source read the file through the link swapped in after the check")
	}
	for _, want := range []string{path, "symbolic link"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not name %q", err, want)
		}
	}
}
