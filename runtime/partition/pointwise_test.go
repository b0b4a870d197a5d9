package partition

import (
	"slices"
	"strings"
	"testing"
)

func TestPointwiseHandComputed(t *testing.T) {
	tests := []struct {
		p, q    int
		inputs  [][]int // per consumer
		outputs [][]int // per producer
	}{
		{4, 2, [][]int{{0, 1}, {2, 3}}, [][]int{{0}, {0}, {1}, {1}}},
		{7, 3, [][]int{{0, 1}, {2, 3}, {4, 5, 6}}, [][]int{{0}, {0}, {1}, {1}, {2}, {2}, {2}}},
		{2, 4, [][]int{{0}, {0}, {1}, {1}}, [][]int{{0, 1}, {2, 3}}},
		{3, 7, [][]int{{0}, {0}, {0}, {1}, {1}, {2}, {2}}, [][]int{{0, 1, 2}, {3, 4}, {5, 6}}},
		{3, 3, [][]int{{0}, {1}, {2}}, [][]int{{0}, {1}, {2}}},
		{1, 3, [][]int{{0}, {0}, {0}}, [][]int{{0, 1, 2}}},
		{3, 1, [][]int{{0, 1, 2}}, [][]int{{0}, {0}, {0}}},
	}
	for _, tt := range tests {
		for i, want := range tt.inputs {
			if got := PointwiseInputs(tt.p, tt.q, i); !slices.Equal(got, want) {
				t.Errorf("PointwiseInputs(%d, %d, %d) = %v, want %v", tt.p, tt.q, i, got, want)
			}
		}
		for j, want := range tt.outputs {
			if got := PointwiseOutputs(tt.p, tt.q, j); !slices.Equal(got, want) {
				t.Errorf("PointwiseOutputs(%d, %d, %d) = %v, want %v", tt.p, tt.q, j, got, want)
			}
		}
	}
}

// For every p, q: the ranges follow the formulas of
// docs/semantics.md#partitioners, every producer and consumer is connected,
// inputs and outputs describe the same edges, and the side with more
// subtasks connects to exactly one peer.
func TestPointwiseConsistent(t *testing.T) {
	for p := 1; p <= 24; p++ {
		for q := 1; q <= 24; q++ {
			edges := map[[2]int]bool{} // {producer, consumer}
			for i := range q {
				in := PointwiseInputs(p, q, i)
				if len(in) == 0 || !contiguous(in) {
					t.Fatalf("p %d q %d: consumer %d reads %v, want a non-empty contiguous range", p, q, i, in)
				}
				if p >= q && !slices.Equal(in, span(i*p/q, (i+1)*p/q)) {
					t.Fatalf("p %d q %d: consumer %d reads %v, want [%d, %d)", p, q, i, in, i*p/q, (i+1)*p/q)
				}
				if p < q && len(in) != 1 {
					t.Fatalf("p %d < q %d: consumer %d reads %v, want one producer", p, q, i, in)
				}
				for _, j := range in {
					edges[[2]int{j, i}] = true
				}
			}
			n := 0
			for j := range p {
				out := PointwiseOutputs(p, q, j)
				if len(out) == 0 || !contiguous(out) {
					t.Fatalf("p %d q %d: producer %d feeds %v, want a non-empty contiguous range", p, q, j, out)
				}
				if p < q && !slices.Equal(out, span((j*q+p-1)/p, ((j+1)*q+p-1)/p)) {
					t.Fatalf("p %d q %d: producer %d feeds %v, want [%d, %d)", p, q, j, out, (j*q+p-1)/p, ((j+1)*q+p-1)/p)
				}
				if p >= q && len(out) != 1 {
					t.Fatalf("p %d >= q %d: producer %d feeds %v, want one consumer", p, q, j, out)
				}
				for _, i := range out {
					if !edges[[2]int{j, i}] {
						t.Fatalf("p %d q %d: producer %d feeds consumer %d, which does not read it", p, q, j, i)
					}
					n++
				}
			}
			if n != len(edges) {
				t.Fatalf("p %d q %d: consumers read %d edges, producers feed %d", p, q, len(edges), n)
			}
			if p == q {
				for i := range p {
					if !slices.Equal(PointwiseInputs(p, q, i), []int{i}) || !slices.Equal(PointwiseOutputs(p, q, i), []int{i}) {
						t.Fatalf("p = q = %d: subtask %d is not connected to itself alone", p, i)
					}
				}
			}
		}
	}
}

func contiguous(s []int) bool {
	for k := 1; k < len(s); k++ {
		if s[k] != s[k-1]+1 {
			return false
		}
	}
	return true
}

func TestOutputsAndInputsByKind(t *testing.T) {
	for _, k := range []Kind{Rebalance, Shuffle, Broadcast, Global, Hash, Custom} {
		if got := Outputs(k, 2, 5, 1); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
			t.Errorf("Outputs(%s, 2, 5, 1) = %v, want all consumers", k, got)
		}
		if got := Inputs(k, 2, 5, 4); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("Inputs(%s, 2, 5, 4) = %v, want all producers", k, got)
		}
	}
	if got := Outputs(Rescale, 2, 5, 1); !slices.Equal(got, PointwiseOutputs(2, 5, 1)) {
		t.Errorf("Outputs(rescale, 2, 5, 1) = %v, want %v", got, PointwiseOutputs(2, 5, 1))
	}
	if got := Inputs(Rescale, 5, 2, 1); !slices.Equal(got, PointwiseInputs(5, 2, 1)) {
		t.Errorf("Inputs(rescale, 5, 2, 1) = %v, want %v", got, PointwiseInputs(5, 2, 1))
	}
	if got := Outputs(Forward, 3, 3, 2); !slices.Equal(got, []int{2}) {
		t.Errorf("Outputs(forward, 3, 3, 2) = %v, want [2]", got)
	}
	if got := AllToAll(3); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("AllToAll(3) = %v", got)
	}
}

func TestPointwisePanicsOnInvalidArguments(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"p 0", func() { PointwiseInputs(0, 2, 0) }, "parallelisms must be positive, got 0 producers and 2 consumers"},
		{"q 0", func() { PointwiseOutputs(2, 0, 0) }, "got 2 producers and 0 consumers"},
		{"consumer", func() { PointwiseInputs(2, 3, 3) }, "consumer 3 is outside [0, 3)"},
		{"producer", func() { PointwiseOutputs(2, 3, -1) }, "producer -1 is outside [0, 2)"},
		{"outputs", func() { Outputs(Hash, 2, 3, 2) }, "producer 2 is outside [0, 2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tt.want) {
					t.Fatalf("panic %v, want it to contain %q", r, tt.want)
				}
			}()
			tt.f()
		})
	}
}
