package job

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/flinkgo/flinkgo/connectors/builtin"
	"github.com/flinkgo/flinkgo/internal/objstore"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
)

// The checkpoint types a job's callers see, from package checkpoint.
type (
	// CheckpointStats describes one checkpoint or savepoint of a job.
	CheckpointStats = checkpoint.Stats
	// Metadata is a completed snapshot's _metadata.
	Metadata = checkpoint.Metadata
)

// ErrCheckpointDeclined wraps the reason a checkpoint could not complete.
var ErrCheckpointDeclined = checkpoint.ErrDeclined

// LoadMetadata reads the _metadata of a savepoint or checkpoint (see
// checkpoint.LoadMetadata).
func LoadMetadata(path string) (*Metadata, string, error) { return checkpoint.LoadMetadata(path) }

// NewJobID returns a random job id (32 hex digits, as Flink's JobID).
func NewJobID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// PlanOptions returns the planner options a job plan needs: the runtime's
// operators derive every output schema (so Explain shows them and a schema
// problem fails the planning), and when the config restores a snapshot
// (config.ConfigRestorePath), the snapshot's max parallelism, which the job
// must keep.
func PlanOptions(job *plan.JobPlan) (plan.Options, error) {
	opts := plan.Options{Schemas: operators.Registry(operators.Options{}), Connectors: builtin.Registry()}
	path := strings.TrimSpace(job.Config[config.ConfigRestorePath])
	if path == "" {
		return opts, nil
	}
	if err := configureObjects(job.Config); err != nil {
		return plan.Options{}, err
	}
	m, _, err := LoadMetadata(path)
	if err != nil {
		return plan.Options{}, err
	}
	opts.RestoredMaxParallelism = m.MaxParallelism
	return opts, nil
}

// objectStoreOptions turns a config's s3.* values into the S3 client's
// options (the client's own defaults fill the rest).
func objectStoreOptions(s3 config.S3Options) objstore.Options {
	return objstore.Options{
		Endpoint: s3.Endpoint, Region: s3.Region,
		AccessKey: s3.AccessKey, SecretKey: s3.SecretKey,
		PathStyle: s3.PathStyle, InstanceMetadata: s3.InstanceMetadata,
	}
}

// configureObjects configures the runtime's S3 client (package objstore)
// from a job config's s3.* keys, before anything reads an s3:// path: the
// planner reads a restored snapshot's _metadata before the job starts.
func configureObjects(cfg map[string]string) error {
	rt, err := config.Parse(cfg)
	if err != nil {
		return err
	}
	if !rt.Checkpoint.S3Set {
		return nil
	}
	if err := objstore.Configure(objectStoreOptions(rt.Checkpoint.S3)); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	return nil
}
