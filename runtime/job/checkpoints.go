package job

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/flinkgo/flinkgo/connectors/builtin"
	"strings"

	"github.com/flinkgo/flinkgo/internal/objstore"
	"github.com/flinkgo/flinkgo/runtime/checkpoint"
	"github.com/flinkgo/flinkgo/runtime/config"
	"github.com/flinkgo/flinkgo/runtime/operators"
	"github.com/flinkgo/flinkgo/runtime/plan"
	"github.com/flinkgo/flinkgo/runtime/proto/planpb"
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
func PlanOptions(job *planpb.JobPlan) (plan.Options, error) {
	opts := plan.Options{Schemas: operators.Registry(operators.Options{}), Connectors: builtin.Registry()}
	path := strings.TrimSpace(job.GetConfig()[config.ConfigRestorePath])
	if path == "" {
		return opts, nil
	}
	if err := configureObjects(job.GetConfig()); err != nil {
		return plan.Options{}, err
	}
	m, _, err := LoadMetadata(path)
	if err != nil {
		return plan.Options{}, err
	}
	opts.RestoredMaxParallelism = m.MaxParallelism
	return opts, nil
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
	if err := objstore.Configure(rt.Checkpoint.S3); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	return nil
}
