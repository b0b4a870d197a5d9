package checkpoint

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flinkgo/flinkgo/internal/beneath"
	"github.com/flinkgo/flinkgo/internal/objstore"
)

// Channel state is what an unaligned checkpoint (Flink's FLIP-76) holds
// besides the operators' states: per input channel of a subtask, the
// batches sent before that channel's barrier which the subtask had not
// processed when it snapshotted its operators. A restore replays them, per
// channel in order, before any new input. Each channel's batches are one
// Arrow IPC file in chk-<n>/channel-state/.

// InputChannels is the channel state of one subtask's inbox.
type InputChannels struct {
	// Producers is how many producers the inbox had: a restore needs the
	// same (rescaling from channel state is refused).
	Producers int            `json:"producers"`
	Channels  []ChannelState `json:"channels"`
}

// ChannelState is one input channel's batches in a checkpoint.
type ChannelState struct {
	// Producer is the channel's index among the inbox's producers, Input
	// the index of the edge it belongs to among the task's inputs.
	Producer int `json:"producer"`
	Input    int `json:"input"`
	// File is the Arrow IPC file holding the batches, relative to the
	// checkpoint storage root.
	File    string `json:"file"`
	Batches int    `json:"batches"`
	Rows    int64  `json:"rows"`
	Bytes   int64  `json:"bytes"` // of the file
}

// Bytes is the size of the files of c's channels (Flink's persisted_data).
func (c *InputChannels) Bytes() int64 {
	var n int64
	if c != nil {
		for _, ch := range c.Channels {
			n += ch.Bytes
		}
	}
	return n
}

// WriteChannel writes the batches of one channel of subtask `subtask` of
// operator uid into checkpoint id's channel-state directory under root
// (the checkpoint storage root). The batches stay the caller's.
func WriteChannel(ctx context.Context, root string, id int64, uid string, subtask, producer, input int, batches []arrow.RecordBatch) (ChannelState, error) {
	cs := ChannelState{Producer: producer, Input: input, Batches: len(batches),
		File: path.Join("chk-"+strconv.FormatInt(id, 10), "channel-state", fmt.Sprintf("%s-%d-channel-%d.arrow", uid, subtask, producer))}
	var buf bytes.Buffer
	w, err := ipc.NewFileWriter(&buf, ipc.WithSchema(batches[0].Schema()))
	if err != nil {
		return cs, err
	}
	for _, b := range batches {
		cs.Rows += b.NumRows()
		if err := w.Write(b); err != nil {
			_ = w.Close()
			return cs, fmt.Errorf("channel state of operator %q subtask %d channel %d: %w", uid, subtask, producer, err)
		}
	}
	if err := w.Close(); err != nil {
		return cs, err
	}
	cs.Bytes = int64(buf.Len())
	file := joinPath(root, cs.File)
	if objstore.IsURL(root) {
		store, err := objstore.ForURL(file)
		if err == nil {
			err = store.PutIfAbsent(ctx, file, buf.Bytes())
		}
		if err != nil {
			return cs, fmt.Errorf("writing channel state %s: %w", file, err)
		}
		return cs, nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return cs, fmt.Errorf("writing channel state: %w", err)
	}
	// Synced before the acknowledgement: _metadata, synced too, may
	// reference it as soon as the checkpoint completes.
	f, err := os.Create(file)
	if err != nil {
		return cs, fmt.Errorf("writing channel state: %w", err)
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return cs, fmt.Errorf("writing channel state %s: %w", file, unwrapPath(err))
	}
	return cs, nil
}

// ReadChannel reads back the batches of a channel written by WriteChannel,
// base being the checkpoint storage root the snapshot was restored from;
// the caller owns them. A local file is opened beneath base, refusing
// symbolic links (see readBeneath).
func ReadChannel(ctx context.Context, base string, cs ChannelState, mem memory.Allocator) ([]arrow.RecordBatch, error) {
	file := joinPath(base, cs.File)
	var data []byte
	var err error
	if objstore.IsURL(file) {
		var store objstore.Store
		if store, err = objstore.ForURL(file); err == nil {
			data, err = store.Read(ctx, file)
		}
	} else {
		data, err = readBeneath(base, cs.File)
	}
	if err != nil {
		return nil, fmt.Errorf("reading channel state %s: %w", file, unwrapPath(err))
	}
	r, err := ipc.NewFileReader(bytes.NewReader(data), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("channel state %s is not an Arrow IPC file: %w", file, err)
	}
	defer r.Close()
	if r.NumRecords() != cs.Batches {
		return nil, fmt.Errorf("channel state %s holds %d batches, its checkpoint's metadata says %d", file, r.NumRecords(), cs.Batches)
	}
	out := make([]arrow.RecordBatch, 0, cs.Batches)
	for i := range cs.Batches {
		b, err := r.RecordBatchAt(i)
		if err != nil {
			for _, o := range out {
				o.Release()
			}
			return nil, fmt.Errorf("channel state %s, batch %d: %w", file, i, err)
		}
		out = append(out, b)
	}
	return out, nil
}

// readBeneath reads the file rel (slash-separated, from a _metadata) beneath
// the local directory base, refusing symbolic links and escapes (package
// beneath): the names come from a file a client may have written.
func readBeneath(base, rel string) ([]byte, error) {
	f, err := beneath.OpenIn(base, filepath.FromSlash(rel))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
