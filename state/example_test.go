package state_test

import (
	"context"
	"fmt"
	"log"
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
