package state_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"

	"github.com/flinkgo/flinkgo/internal/keygroup"
	"github.com/flinkgo/flinkgo/state"
)

// A keyed count, checkpointed into job storage and restored by two
// subtasks after a rescale from parallelism 1 to 2.
func Example() {
	tmp, err := os.MkdirTemp("", "state-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	ctx := context.Background()
	const maxP = 128

	opts := state.Options{
		Dir:            filepath.Join(tmp, "work", "count-0"),
		OperatorUID:    "count",
		MaxParallelism: maxP,
		KeyGroups:      state.SubtaskKeyGroups(maxP, 1, 0),
	}
	b, err := state.Open(opts)
	if err != nil {
		log.Fatal(err)
	}
	counts, err := state.NewReducing(b, "counts", state.Int64Codec{},
		func(a, b int64) (int64, error) { return a + b, nil })
	if err != nil {
		log.Fatal(err)
	}
	key := func(s string) state.Key {
		// The runtime computes key groups from Arrow rows with
		// partition.KeyGroups; a hash of the key is enough here.
		var h int32
		for _, c := range s {
			h = 31*h + c
		}
		return state.Key{Group: keygroup.ForHash(h, maxP), Bytes: []byte(s)}
	}
	for _, w := range []string{"a", "b", "a", "c", "a"} {
		if err := counts.Add(key(w), 1); err != nil {
			log.Fatal(err)
		}
	}

	// Checkpoint 1: the synchronous part at the barrier, then the
	// asynchronous part (usually on another goroutine).
	st := state.Storage{Root: filepath.Join(tmp, "checkpoints", "job-1")}
	if err := st.Init(); err != nil {
		log.Fatal(err)
	}
	pending, err := b.PrepareSnapshot(1)
	if err != nil {
		log.Fatal(err)
	}
	h, err := pending.Persist(ctx, st)
	if err != nil {
		log.Fatal(err)
	}
	registry := state.NewSharedRegistry(st)
	if err := registry.Register(1, []state.Handle{h}); err != nil {
		log.Fatal(err)
	}
	if err := b.Close(); err != nil {
		log.Fatal(err)
	}

	// Restore at parallelism 2: each subtask gets its key groups.
	for i := range 2 {
		o := opts
		o.Dir = filepath.Join(tmp, "work", fmt.Sprintf("count-%d", i))
		o.Subtask = i
		o.KeyGroups = state.SubtaskKeyGroups(maxP, 2, i)
		r, err := state.Restore(ctx, o, st.Root, []state.Handle{h})
		if err != nil {
			log.Fatal(err)
		}
		counts, err := state.NewReducing(r, "counts", state.Int64Codec{},
			func(a, b int64) (int64, error) { return a + b, nil })
		if err != nil {
			log.Fatal(err)
		}
		_ = counts.ForEach(func(k state.Key, n int64) error {
			fmt.Printf("subtask %d: %s=%d\n", i, k.Bytes, n)
			return nil
		})
		if err := r.Close(); err != nil {
			log.Fatal(err)
		}
	}

	// The checkpoint is subsumed: its shared files go.
	if err := registry.Release(1); err != nil {
		log.Fatal(err)
	}
	left, _ := os.ReadDir(st.SharedDir())
	fmt.Println("shared files left:", len(left))
	// Output:
	// subtask 0: b=1
	// subtask 0: c=1
	// subtask 1: a=3
	// shared files left: 0
}

// A tumbling-window count as a window operator keeps it: per key and
// window, a count in a map state and an event-time timer at the window's
// last millisecond; the watermark fires the windows in time order.
func ExampleTimerService() {
	tmp, err := os.MkdirTemp("", "state-timers-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	const maxP, size = 128, 10 // windows of 10 ms
	b, err := state.Open(state.Options{
		Dir:            filepath.Join(tmp, "window-0"),
		OperatorUID:    "window",
		MaxParallelism: maxP,
		KeyGroups:      state.SubtaskKeyGroups(maxP, 1, 0),
	})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()
	counts, err := state.NewMap(b, "counts", state.Int64Codec{}, state.Int64Codec{}) // window end -> count
	if err != nil {
		log.Fatal(err)
	}
	timers, err := state.NewTimerService(b, "window-timers")
	if err != nil {
		log.Fatal(err)
	}
	key := func(s string) state.Key {
		return state.Key{Group: keygroup.ForHash(int32(s[0]), maxP), Bytes: []byte(s)}
	}
	namespace := func(end int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(end)) }

	rows := []struct {
		user string
		ts   int64
	}{{"bob", 3}, {"amy", 12}, {"bob", 7}, {"amy", -4}, {"bob", 15}}
	for _, r := range rows {
		end := r.ts - ((r.ts%size)+size)%size + size // Flink's tumbling window start, plus size
		n, _, err := counts.Get(key(r.user), end)
		if err != nil {
			log.Fatal(err)
		}
		if err := counts.Put(key(r.user), end, n+1); err != nil {
			log.Fatal(err)
		}
		// Registered once per key and window, however many rows.
		if err := timers.RegisterEventTimeTimer(key(r.user), namespace(end), end-1); err != nil {
			log.Fatal(err)
		}
	}
	fire := func(t state.Timer) error {
		end := int64(binary.BigEndian.Uint64(t.Namespace))
		n, _, err := counts.Get(t.Key, end)
		if err != nil {
			return err
		}
		fmt.Printf("%s [%d, %d): %d\n", t.Key.Bytes, end-size, end, n)
		return counts.Remove(t.Key, end)
	}
	for _, wm := range []int64{9, math.MaxInt64} { // the second at the end of the input
		fmt.Println("watermark", wm)
		if err := timers.AdvanceWatermark(wm, fire); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// watermark 9
	// amy [-10, 0): 1
	// bob [0, 10): 2
	// watermark 9223372036854775807
	// amy [10, 20): 1
	// bob [10, 20): 1
}
