package partition

import (
	"errors"
	"math"
	"strings"
	"testing"
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

func TestKeyGroupForHash(t *testing.T) {
	// MurmurMix(0) = 0x2362F9DE = 593689054 (see TestMurmurMixFlink).
	if got, want := KeyGroupForHash(0, 128), 593689054%128; got != want || want != 94 {
		t.Errorf("KeyGroupForHash(0, 128) = %d, want %d (94)", got, want)
	}
	if got, want := KeyGroupForHash(0, 32768), 593689054%32768; got != want {
		t.Errorf("KeyGroupForHash(0, 32768) = %d, want %d", got, want)
	}
	for _, maxP := range []int{1, 2, 7, 128, 1000, 32768} {
		for _, h := range []int32{math.MinInt32, math.MinInt32 + 1, -1, 0, 1, 42, math.MaxInt32} {
			kg := KeyGroupForHash(h, maxP)
			if kg < 0 || kg >= maxP {
				t.Errorf("KeyGroupForHash(%d, %d) = %d, outside [0, %d)", h, maxP, kg, maxP)
			}
			if want := int(MurmurMix(h)) % maxP; kg != want {
				t.Errorf("KeyGroupForHash(%d, %d) = %d, want %d", h, maxP, kg, want)
			}
		}
	}
	// Consecutive hashes spread over all key groups.
	seen := make([]int, 128)
	for h := int32(0); h < 128*64; h++ {
		seen[KeyGroupForHash(h, 128)]++
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
		start, end := KeyGroupRange(tt.maxP, tt.p, tt.i)
		if start != tt.start || end != tt.end {
			t.Errorf("KeyGroupRange(%d, %d, %d) = [%d, %d], want [%d, %d]", tt.maxP, tt.p, tt.i, start, end, tt.start, tt.end)
		}
	}
	idx := []struct{ maxP, p, kg, want int }{
		{128, 3, 0, 0}, {128, 3, 42, 0}, {128, 3, 43, 1}, {128, 3, 85, 1}, {128, 3, 86, 2}, {128, 3, 127, 2},
		{10, 4, 2, 0}, {10, 4, 3, 1}, {10, 4, 5, 2}, {10, 4, 9, 3},
	}
	for _, tt := range idx {
		if got := OperatorIndexForKeyGroup(tt.maxP, tt.p, tt.kg); got != tt.want {
			t.Errorf("OperatorIndexForKeyGroup(%d, %d, %d) = %d, want %d", tt.maxP, tt.p, tt.kg, got, tt.want)
		}
	}
}

// The ranges of the p subtasks are non-empty, contiguous, cover every key
// group exactly once, and agree with OperatorIndexForKeyGroup.
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
				start, end := KeyGroupRange(maxP, p, i)
				if start != next || end < start {
					t.Fatalf("maxP %d p %d: subtask %d has [%d, %d], want it to start at %d and be non-empty", maxP, p, i, start, end, next)
				}
				for kg := start; kg <= end; kg++ {
					if got := OperatorIndexForKeyGroup(maxP, p, kg); got != i {
						t.Fatalf("maxP %d p %d: OperatorIndexForKeyGroup(kg %d) = %d, but KeyGroupRange gives it to %d", maxP, p, kg, got, i)
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
		{"KeyGroupForHash maxP 0", func() { KeyGroupForHash(1, 0) }, "max parallelism 0"},
		{"KeyGroupForHash maxP too big", func() { KeyGroupForHash(1, 1<<16) }, "max parallelism 65536"},
		{"KeyGroupRange p > maxP", func() { KeyGroupRange(128, 200, 0) }, "parallelism 200 exceeds max parallelism 128"},
		{"KeyGroupRange subtask", func() { KeyGroupRange(128, 4, 4) }, "subtask 4 is outside [0, 4)"},
		{"OperatorIndexForKeyGroup kg", func() { OperatorIndexForKeyGroup(128, 4, 128) }, "key group 128 is outside [0, 128)"},
		{"OperatorIndexForKeyGroup p 0", func() { OperatorIndexForKeyGroup(128, 0, 1) }, "parallelism 0 is not positive"},
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
