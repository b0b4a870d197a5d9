package state

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flinkgo/flinkgo/internal/keygroup"
)

// Benchmarks of snapshots and restores at realistic state sizes: ~100 MB,
// and ~1 GB when FLINKGO_BENCH_LARGE=1. Run them once:
//
//	go test -run '^$' -bench . -benchtime 1x ./state/
//	FLINKGO_BENCH_LARGE=1 go test -run '^$' -bench . -benchtime 1x -timeout 60m ./state/
//
// Values are random (incompressible) 1 KiB byte strings, so the state's
// size on disk is about its logical size.

const benchValueSize = 1 << 10

type benchSize struct {
	name  string
	bytes int
}

func benchSizes() []benchSize {
	sizes := []benchSize{{"100MB", 100 << 20}}
	if os.Getenv("FLINKGO_BENCH_LARGE") == "1" {
		sizes = append(sizes, benchSize{"1GB", 1 << 30})
	}
	return sizes
}

// benchKey returns the i-th key of a benchmark state (max parallelism 128).
func benchKey(i int) Key {
	b := []byte(fmt.Sprintf("key-%010d", i))
	return Key{Group: keygroup.ForHash(int32(i)*-1640531535, 128), Bytes: b}
}

// fillBench writes the keys among the first n that fall into b's key
// groups into value state "v", with random values.
func fillBench(tb testing.TB, b *Backend, n int, rng *rand.Rand) {
	tb.Helper()
	v, err := NewValue(b, "v", BytesCodec{})
	if err != nil {
		tb.Fatal(err)
	}
	val := make([]byte, benchValueSize)
	for i := range n {
		key := benchKey(i)
		if !b.KeyGroups().Contains(key.Group) {
			continue
		}
		fillRandom(rng, val)
		if err := v.Put(key, val); err != nil {
			tb.Fatal(err)
		}
	}
}

func fillRandom(rng *rand.Rand, p []byte) {
	for i := 0; i+8 <= len(p); i += 8 {
		u := rng.Uint64()
		for j := range 8 {
			p[i+j] = byte(u >> (8 * j))
		}
	}
}

func benchOptions(tb testing.TB, r KeyGroupRange, subtask int) Options {
	o := testOptions(tb, r)
	o.Subtask = subtask
	o.MemTableSize = 64 << 20 // as a task with a real memory budget would
	o.CacheSize = 64 << 20
	return o
}

func reportRate(b *testing.B, bytes int64, d time.Duration, prefix string) {
	b.ReportMetric(float64(bytes)/(1<<20)/d.Seconds(), prefix+"MB/s")
	b.ReportMetric(d.Seconds(), prefix+"s")
}

// BenchmarkCheckpoint measures a full checkpoint (the first one of a
// backend, every sstable written): PrepareSnapshot then Persist, into
// storage on the working directory's filesystem (hard links) and copied
// (as into storage on another filesystem).
func BenchmarkCheckpoint(b *testing.B) {
	for _, size := range benchSizes() {
		be := openBackend(b, benchOptions(b, KeyGroupRange{Start: 0, End: 127}, 0))
		fillBench(b, be, size.bytes/benchValueSize, rand.New(rand.NewPCG(1, 1)))
		// Flush beforehand, so that both modes measure the same work:
		// prepare-s is the Pebble checkpoint without a memtable flush.
		if err := be.db.Flush(); err != nil {
			b.Fatal(err)
		}
		for _, copyFiles := range []bool{false, true} {
			mode := map[bool]string{false: "link", true: "copy"}[copyFiles]
			b.Run(fmt.Sprintf("size=%s/%s", size.name, mode), func(b *testing.B) {
				var prepare, persist time.Duration
				var stateSize int64
				n := 0
				for b.Loop() {
					st := Storage{Root: filepath.Join(b.TempDir(), "job"), CopyFiles: copyFiles}
					if err := st.Init(); err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					p, err := be.PrepareSnapshot(int64(n + 1))
					if err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					h, err := p.Persist(b.Context(), st)
					if err != nil {
						b.Fatal(err)
					}
					prepare += t1.Sub(t0)
					persist += time.Since(t1)
					stateSize = h.StateSize
					n++
				}
				b.ReportMetric(float64(stateSize)/(1<<20), "state-MB")
				b.ReportMetric(prepare.Seconds()/float64(n), "prepare-s")
				reportRate(b, stateSize, persist/time.Duration(n), "persist-")
			})
		}
	}
}

// BenchmarkRestore measures restores of a checkpoint of two backends
// ([0,63] and [64,127]): into the same key groups (the fast path: links,
// no data copied), and rescaled into one backend ([0,127]) by ingesting
// sstables and by batched writes.
func BenchmarkRestore(b *testing.B) {
	for _, size := range benchSizes() {
		st := Storage{Root: filepath.Join(b.TempDir(), "job")}
		if err := st.Init(); err != nil {
			b.Fatal(err)
		}
		var handles []Handle
		var stateSize int64
		for i, r := range []KeyGroupRange{{Start: 0, End: 63}, {Start: 64, End: 127}} {
			be := openBackend(b, benchOptions(b, r, i))
			fillBench(b, be, size.bytes/benchValueSize, rand.New(rand.NewPCG(uint64(i), 1)))
			h := checkpoint(b, be, st, 1)
			handles = append(handles, h)
			stateSize += h.StateSize
			_ = be.Close()
		}
		cases := []struct {
			name    string
			r       KeyGroupRange
			hs      []Handle
			byBatch bool
		}{
			{"same-range", KeyGroupRange{Start: 0, End: 63}, handles[:1], false},
			{"rescale-2to1/ingest", KeyGroupRange{Start: 0, End: 127}, handles, false},
			{"rescale-2to1/batch", KeyGroupRange{Start: 0, End: 127}, handles, true},
		}
		for _, c := range cases {
			b.Run(fmt.Sprintf("size=%s/%s", size.name, c.name), func(b *testing.B) {
				bytes := stateSize
				if len(c.hs) == 1 {
					bytes = c.hs[0].StateSize
				}
				var total time.Duration
				n := 0
				for b.Loop() {
					o := benchOptions(b, c.r, 0)
					o.restoreByBatch = c.byBatch
					t0 := time.Now()
					r, err := Restore(b.Context(), o, st.Root, c.hs)
					if err != nil {
						b.Fatal(err)
					}
					total += time.Since(t0)
					n++
					if err := r.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(bytes)/(1<<20), "state-MB")
				reportRate(b, bytes, total/time.Duration(n), "restore-")
			})
		}
	}
}

// BenchmarkIncrementalCheckpoint measures what an incremental checkpoint
// writes after 1% of the keys changed, against the full first checkpoint.
func BenchmarkIncrementalCheckpoint(b *testing.B) {
	for _, size := range benchSizes() {
		b.Run("size="+size.name, func(b *testing.B) {
			n := size.bytes / benchValueSize
			rng := rand.New(rand.NewPCG(2, 2))
			var first, incr int64
			var incrTime time.Duration
			runs := 0
			for b.Loop() {
				be, err := Open(benchOptions(b, KeyGroupRange{Start: 0, End: 127}, 0))
				if err != nil {
					b.Fatal(err)
				}
				st := Storage{Root: filepath.Join(b.TempDir(), "job")}
				if err := st.Init(); err != nil {
					b.Fatal(err)
				}
				fillBench(b, be, n, rng)
				h1 := checkpoint(b, be, st, 1)
				v, _ := NewValue(be, "v", BytesCodec{})
				val := make([]byte, benchValueSize)
				for i := 0; i < n; i += 100 {
					fillRandom(rng, val)
					if err := v.Put(benchKey(i), val); err != nil {
						b.Fatal(err)
					}
				}
				t0 := time.Now()
				h2 := checkpoint(b, be, st, 2)
				incrTime += time.Since(t0)
				first, incr = h1.BytesWritten, h2.BytesWritten
				runs++
				if err := be.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(first), "full-bytes")
			b.ReportMetric(float64(incr), "incremental-bytes")
			b.ReportMetric(100*float64(incr)/float64(first), "incremental-%")
			b.ReportMetric(incrTime.Seconds()/float64(runs), "incremental-s")
		})
	}
}

// BenchmarkS3Checkpoint measures checkpoints of ~100 MB of keyed state
// into S3 (a moto server on loopback; skipped without it): the full first
// checkpoint, and the incremental one after 1% of the keys changed (a
// memtable flush: one new sstable, the others referenced).
//
//	go test -run '^$' -bench S3Checkpoint -benchtime 1x ./state/
func BenchmarkS3Checkpoint(b *testing.B) {
	st, _, _ := s3Storage(b)
	for _, size := range benchSizes() {
		b.Run("size="+size.name, func(b *testing.B) {
			n := size.bytes / benchValueSize
			rng := rand.New(rand.NewPCG(3, 3))
			var full, incr time.Duration
			var fullBytes, incrBytes int64
			runs := 0
			for b.Loop() {
				be, err := Open(benchOptions(b, KeyGroupRange{Start: 0, End: 127}, 0))
				if err != nil {
					b.Fatal(err)
				}
				root := Storage{Root: fmt.Sprintf("%s-%d", st.Root, runs)}
				fillBench(b, be, n, rng)
				// Settle the LSM first, as in a job that has run a while:
				// otherwise the compaction of the freshly filled L0 files
				// rewrites every sstable between the two checkpoints.
				if err := be.db.Compact(b.Context(), []byte{0}, []byte{0xff, 0xff, 0xff, 0xff}, true); err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				h1 := checkpoint(b, be, root, 1)
				full += time.Since(t0)
				v, _ := NewValue(be, "v", BytesCodec{})
				val := make([]byte, benchValueSize)
				for i := 0; i < n; i += 100 {
					fillRandom(rng, val)
					if err := v.Put(benchKey(i), val); err != nil {
						b.Fatal(err)
					}
				}
				t1 := time.Now()
				h2 := checkpoint(b, be, root, 2)
				incr += time.Since(t1)
				fullBytes, incrBytes = h1.BytesWritten, h2.BytesWritten
				runs++
				if err := be.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(fullBytes)/(1<<20), "full-MB")
			b.ReportMetric(full.Seconds()/float64(runs), "full-s")
			b.ReportMetric(float64(incrBytes)/(1<<20), "incremental-MB")
			b.ReportMetric(incr.Seconds()/float64(runs), "incremental-s")
		})
	}
}
