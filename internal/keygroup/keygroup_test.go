package keygroup

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/flinkgo/flinkgo/internal/murmur3"
)

func TestDefaultMaxParallelism(t *testing.T) {
	tests := []struct{ p, want int }{
		{-5, 128},
		{0, 128},
		{1, 128},
		{2, 128},
		{85, 128},  // 85+42 = 127
		{86, 256},  // 86+43 = 129
		{100, 256}, // 150
		{171, 256}, // 171+85 = 256
		{172, 512}, // 258
		{1000, 2048},
		{21845, 32768}, // 32767
		{21846, 32768}, // 32769 -> 65536, capped
		{30000, 32768},
		{32768, 32768},
		{40000, 32768},
		{1 << 20, 32768},
	}
	for _, tt := range tests {
		if got := DefaultMaxParallelism(tt.p); got != tt.want {
			t.Errorf("DefaultMaxParallelism(%d) = %d, want %d", tt.p, got, tt.want)
		}
	}
}

func TestRoundUpPow2(t *testing.T) {
	tests := []struct{ in, want int }{{-1, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 4}, {4, 4}, {5, 8}, {127, 128}, {128, 128}, {129, 256}}
	for _, tt := range tests {
		if got := roundUpPow2(tt.in); got != tt.want {
			t.Errorf("roundUpPow2(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestValidateParallelism(t *testing.T) {
	for _, ok := range [][2]int{{1, 1}, {1, 128}, {128, 128}, {32768, 32768}} {
		if err := ValidateParallelism(ok[0], ok[1]); err != nil {
			t.Errorf("ValidateParallelism(%d, %d) = %v, want nil", ok[0], ok[1], err)
		}
	}
	tests := []struct {
		p, maxP int
		want    []string
	}{
		{200, 128, []string{"parallelism 200 exceeds max parallelism 128", "lower the parallelism to at most 128", "pipeline.max-parallelism"}},
		{0, 128, []string{"parallelism 0 is not positive"}},
		{-1, 128, []string{"parallelism -1 is not positive"}},
		{1, 0, []string{"max parallelism 0 is outside [1, 32768]"}},
		{1, 40000, []string{"max parallelism 40000 is outside [1, 32768]"}},
		{0, 0, []string{"max parallelism 0 is outside", "parallelism 0 is not positive"}}, // every problem at once
	}
	for _, tt := range tests {
		err := ValidateParallelism(tt.p, tt.maxP)
		if !errors.Is(err, ErrInvalidParallelism) {
			t.Errorf("ValidateParallelism(%d, %d) = %v, want ErrInvalidParallelism", tt.p, tt.maxP, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ValidateParallelism(%d, %d) = %q, want it to contain %q", tt.p, tt.maxP, err, w)
			}
		}
	}
}

func TestForHash(t *testing.T) {
	// MurmurMix(0) = 0x2362F9DE = 593689054 (see TestMurmurMixFlink).
	if got, want := ForHash(0, 128), 593689054%128; got != want || want != 94 {
		t.Errorf("ForHash(0, 128) = %d, want %d (94)", got, want)
	}
	if got, want := ForHash(0, 32768), 593689054%32768; got != want {
		t.Errorf("ForHash(0, 32768) = %d, want %d", got, want)
	}
	for _, maxP := range []int{1, 2, 7, 128, 1000, 32768} {
		for _, h := range []int32{math.MinInt32, math.MinInt32 + 1, -1, 0, 1, 42, math.MaxInt32} {
			kg := ForHash(h, maxP)
			if kg < 0 || kg >= maxP {
				t.Errorf("ForHash(%d, %d) = %d, outside [0, %d)", h, maxP, kg, maxP)
			}
			if want := int(MurmurMix(h)) % maxP; kg != want {
				t.Errorf("ForHash(%d, %d) = %d, want %d", h, maxP, kg, want)
			}
		}
	}
	// Consecutive hashes spread over all key groups.
	seen := make([]int, 128)
	for h := int32(0); h < 128*64; h++ {
		seen[ForHash(h, 128)]++
	}
	for kg, n := range seen {
		if n == 0 {
			t.Errorf("no hash in [0, 8192) maps to key group %d of 128", kg)
		}
	}
}

func TestKeyGroupRangeHandComputed(t *testing.T) {
	tests := []struct{ maxP, p, i, start, end int }{
		{128, 1, 0, 0, 127},
		{128, 2, 0, 0, 63},
		{128, 2, 1, 64, 127},
		{128, 3, 0, 0, 42},
		{128, 3, 1, 43, 85},
		{128, 3, 2, 86, 127},
		{10, 4, 0, 0, 2},
		{10, 4, 1, 3, 4},
		{10, 4, 2, 5, 7},
		{10, 4, 3, 8, 9},
		{5, 5, 3, 3, 3},
	}
	for _, tt := range tests {
		r := SubtaskRange(tt.maxP, tt.p, tt.i)
		start, end := r.Start, r.End
		if start != tt.start || end != tt.end {
			t.Errorf("SubtaskRange(%d, %d, %d) = [%d, %d], want [%d, %d]", tt.maxP, tt.p, tt.i, start, end, tt.start, tt.end)
		}
	}
	idx := []struct{ maxP, p, kg, want int }{
		{128, 3, 0, 0}, {128, 3, 42, 0}, {128, 3, 43, 1}, {128, 3, 85, 1}, {128, 3, 86, 2}, {128, 3, 127, 2},
		{10, 4, 2, 0}, {10, 4, 3, 1}, {10, 4, 5, 2}, {10, 4, 9, 3},
	}
	for _, tt := range idx {
		if got := Subtask(tt.maxP, tt.p, tt.kg); got != tt.want {
			t.Errorf("Subtask(%d, %d, %d) = %d, want %d", tt.maxP, tt.p, tt.kg, got, tt.want)
		}
	}
}

// The ranges of the p subtasks are non-empty, contiguous, cover every key
// group exactly once, and agree with Subtask.
func TestKeyGroupRangeCoversEveryKeyGroupOnce(t *testing.T) {
	maxPs := []int{1, 2, 3, 7, 10, 100, 128, 129, 256, 1000, 4096, 32768}
	for _, maxP := range maxPs {
		ps := []int{}
		for p := 1; p <= min(maxP, 40); p++ {
			ps = append(ps, p)
		}
		for _, p := range []int{maxP / 3, maxP / 2, maxP - 1, maxP} {
			if p > 40 {
				ps = append(ps, p)
			}
		}
		for _, p := range ps {
			next := 0
			for i := range p {
				r := SubtaskRange(maxP, p, i)
				start, end := r.Start, r.End
				if start != next || end < start {
					t.Fatalf("maxP %d p %d: subtask %d has [%d, %d], want it to start at %d and be non-empty", maxP, p, i, start, end, next)
				}
				for kg := start; kg <= end; kg++ {
					if got := Subtask(maxP, p, kg); got != i {
						t.Fatalf("maxP %d p %d: Subtask(kg %d) = %d, but SubtaskRange gives it to %d", maxP, p, kg, got, i)
					}
				}
				next = end + 1
			}
			if next != maxP {
				t.Fatalf("maxP %d p %d: ranges end at %d, want %d", maxP, p, next, maxP)
			}
		}
	}
}

func TestKeyGroupArithmeticPanicsOnInvalidArguments(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"ForHash maxP 0", func() { ForHash(1, 0) }, "max parallelism 0"},
		{"ForHash maxP too big", func() { ForHash(1, 1<<16) }, "max parallelism 65536"},
		{"SubtaskRange p > maxP", func() { SubtaskRange(128, 200, 0) }, "parallelism 200 exceeds max parallelism 128"},
		{"SubtaskRange subtask", func() { SubtaskRange(128, 4, 4) }, "subtask 4 is outside [0, 4)"},
		{"Subtask kg", func() { Subtask(128, 4, 128) }, "key group 128 is outside [0, 128)"},
		{"Subtask p 0", func() { Subtask(128, 0, 1) }, "parallelism 0 is not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("did not panic")
				}
				if msg, _ := r.(string); !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %q, want it to contain %q", r, tt.want)
				}
			}()
			tt.f()
		})
	}
}

// MurmurMix is Flink's MathUtils.murmurHash(int): murmur3 of the int's four
// little-endian bytes, seed 0, made non-negative.
func TestMurmurMixFlink(t *testing.T) {
	tests := []struct {
		in   int32
		want int32
	}{
		{0, 0x2362F9DE},                         // positive: as is
		{-1, 0x76293B50},                        // bytes ff ff ff ff
		{-0x789abcdf, 0x100000000 - 0xF55B516B}, // 0x87654321: hash 0xF55B516B is negative, negated
		{-2089875627, 0},                        // 0x836f0755: hash 0x80000000 (math.MinInt32) gives 0
	}
	for _, tt := range tests {
		if got := MurmurMix(tt.in); got != tt.want {
			t.Errorf("MurmurMix(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
	for i := int32(-100000); i < 100000; i += 7 {
		b := binary.LittleEndian.AppendUint32(nil, uint32(i))
		raw := int32(murmur3.Sum32(b, 0))
		want := raw
		if raw < 0 {
			want = -raw
		}
		if raw == math.MinInt32 {
			want = 0
		}
		if got := MurmurMix(i); got != want || got < 0 {
			t.Fatalf("MurmurMix(%d) = %d, want %d", i, got, want)
		}
	}
}

func TestValidateMaxParallelism(t *testing.T) {
	for _, ok := range []int{1, 128, 32768} {
		if err := ValidateMaxParallelism(ok); err != nil {
			t.Errorf("ValidateMaxParallelism(%d) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []int{-1, 0, 32769} {
		if err := ValidateMaxParallelism(bad); !errors.Is(err, ErrInvalidParallelism) || !strings.Contains(err.Error(), "is outside [1, 32768]") {
			t.Errorf("ValidateMaxParallelism(%d) = %v, want ErrInvalidParallelism naming the bounds", bad, err)
		}
	}
}

func TestRange(t *testing.T) {
	r := Range{Start: 64, End: 127}
	if !r.Contains(64) || !r.Contains(127) || r.Contains(63) || r.Contains(128) {
		t.Errorf("%v.Contains is wrong at its ends", r)
	}
	if r.Len() != 64 || (Range{Start: 5, End: 2}).Len() != 0 {
		t.Errorf("Len: %d and %d, want 64 and 0", r.Len(), Range{Start: 5, End: 2}.Len())
	}
	if i, ok := r.Intersect(Range{Start: 0, End: 99}); !ok || i != (Range{Start: 64, End: 99}) {
		t.Errorf("Intersect = %v, %v, want [64, 99], true", i, ok)
	}
	if _, ok := r.Intersect(Range{Start: 0, End: 63}); ok {
		t.Error("disjoint ranges intersect")
	}
	if r.String() != "[64, 127]" {
		t.Errorf("String() = %q", r.String())
	}
}
