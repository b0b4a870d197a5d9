package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flinkgo/flinkgo/internal/fsutil"
	"github.com/flinkgo/flinkgo/internal/objstore"
)

// MetadataVersion is the version of the _metadata format written here.
const MetadataVersion = 1

// Metadata is a completed checkpoint's or savepoint's _metadata file: the
// state of every operator subtask, matched to operators by uid on restore
// (docs/semantics.md#uids). Paths inside are relative to the checkpoint storage
// root (<dir>/<job-id>) for checkpoints, and to the savepoint's own
// directory for savepoints, so a savepoint can be moved.
type Metadata struct {
	Version        int             `json:"version"`
	JobID          string          `json:"job_id"`
	JobName        string          `json:"job_name"`
	CheckpointID   int64           `json:"checkpoint_id"`
	Savepoint      bool            `json:"savepoint"`
	Timestamp      time.Time       `json:"timestamp"`
	MaxParallelism int             `json:"max_parallelism"`
	Operators      []OperatorState `json:"operators"`
}

// OperatorState is one operator's state in a snapshot.
type OperatorState struct {
	UID         string         `json:"uid"`
	Name        string         `json:"name"`
	Kind        string         `json:"kind"`
	Parallelism int            `json:"parallelism"`
	Subtasks    []SubtaskState `json:"subtasks"`
}

// SubtaskState is one operator subtask's state. Each kind of operator
// fills its own field; the encodings belong to the source, sink and state
// packages.
type SubtaskState struct {
	Subtask int             `json:"subtask"`
	Source  json.RawMessage `json:"source,omitempty"`
	Sink    json.RawMessage `json:"sink,omitempty"`
	Keyed   json.RawMessage `json:"keyed,omitempty"`
	// Operator is the small state of an operator that is neither a
	// source, a sink nor keyed (a limit's count), encoded by the operator.
	Operator json.RawMessage `json:"operator,omitempty"`
	// Inputs is the channel state of an unaligned checkpoint, on the
	// operator that heads the subtask's chain (the one reading its inbox).
	Inputs *InputChannels `json:"input_channels,omitempty"`
}

// Empty reports whether the subtask has no state at all.
func (s SubtaskState) Empty() bool {
	return s.Source == nil && s.Sink == nil && s.Keyed == nil && s.Operator == nil && s.Inputs == nil
}

// ChannelStateBytes is the size of m's channel state files (Flink's
// persisted_data).
func (m *Metadata) ChannelStateBytes() int64 {
	var n int64
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			n += st.Inputs.Bytes()
		}
	}
	return n
}

// ChannelStateOf returns the first operator of m holding channel state
// (an unaligned checkpoint's), false when m holds none.
func (m *Metadata) ChannelStateOf() (*OperatorState, bool) {
	for i := range m.Operators {
		for _, st := range m.Operators[i].Subtasks {
			if st.Inputs != nil {
				return &m.Operators[i], true
			}
		}
	}
	return nil, false
}

// unwrapPath drops the path of an *os.PathError, which the message
// already names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteMetadata writes dir/_metadata atomically: a reader sees the whole
// file or none (a checkpoint without _metadata never completed).
//
// On object storage (dir an s3:// URL) it is one conditional put
// (If-None-Match: *), written after every file the metadata references:
// an object store never shows a partial object, and the condition keeps
// a second writer from replacing a completed checkpoint's _metadata.
func WriteMetadata(dir string, m *Metadata) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if objstore.IsURL(dir) {
		file := objstore.Join(dir, "_metadata")
		store, err := objstore.ForURL(file)
		if err == nil {
			err = store.PutIfAbsent(context.Background(), file, data)
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", file, err)
		}
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, unwrapPath(err))
	}
	tmp := filepath.Join(dir, "._metadata.inprogress")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, "_metadata"))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, "_metadata"), err)
	}
	return fsutil.SyncDir(dir)
}

// LoadMetadata reads the _metadata of a savepoint or checkpoint: path is
// its directory or the _metadata file itself. It returns the metadata and
// the directory that relative paths in a savepoint resolve against.
func LoadMetadata(path string) (*Metadata, string, error) {
	file := path
	var data []byte
	var err error
	if objstore.IsURL(path) {
		file, data, err = readRemoteMetadata(path)
	} else {
		if fi, statErr := os.Stat(path); statErr == nil && fi.IsDir() {
			file = filepath.Join(path, "_metadata")
		}
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, "", unreadable(path, err)
	}
	m, err := parseMetadata(file, data)
	if err != nil {
		return nil, "", err
	}
	return m, ParentDir(file), nil
}

// unreadable is the error of a restore path whose _metadata cannot be read.
func unreadable(path string, err error) error {
	return fmt.Errorf("checkpoint: cannot read the snapshot to restore at %s: %w (give a savepoint directory, a retained chk-<n> directory or its _metadata file)", path, unwrapPath(err))
}

// parseMetadata decodes the _metadata file's data.
func parseMetadata(file string, data []byte) (*Metadata, error) {
	m := &Metadata{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, fmt.Errorf("checkpoint: %s is not a flinkgo snapshot's _metadata: %w", file, err)
	}
	if m.Version != MetadataVersion {
		return nil, fmt.Errorf("checkpoint: %s has metadata version %d; this runtime reads version %d", file, m.Version, MetadataVersion)
	}
	return m, nil
}

// readRemoteMetadata reads the _metadata object of an s3:// snapshot:
// path is the snapshot's prefix or its _metadata object.
func readRemoteMetadata(path string) (string, []byte, error) {
	store, err := objstore.ForURL(path)
	if err != nil {
		return path, nil, err
	}
	file := strings.TrimSuffix(path, "/")
	if !strings.HasSuffix(file, "/_metadata") {
		file = objstore.Join(file, "_metadata")
	}
	data, err := store.Read(context.Background(), file)
	return file, data, err
}

// NewSavepointDir returns a fresh savepoint directory under dir, named as
// Flink's: savepoint-<first 6 characters of the job id>-<random>.
func NewSavepointDir(dir, jobID string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := jobID
	if len(prefix) > 6 {
		prefix = prefix[:6]
	}
	return joinPath(dir, fmt.Sprintf("savepoint-%s-%s", prefix, hex.EncodeToString(b[:])))
}
