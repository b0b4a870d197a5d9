package murmur3

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// Published MurmurHash3 x86_32 test vectors.
func TestMurmur3Vectors(t *testing.T) {
	tests := []struct {
		data string
		seed uint32
		want uint32
	}{
		{"", 0, 0},
		{"", 1, 0x514E28B7},
		{"", 0xffffffff, 0x81F16F39},
		{"\xff\xff\xff\xff", 0, 0x76293B50},
		{"\x21\x43\x65\x87", 0, 0xF55B516B},
		{"\x21\x43\x65\x87", 0x5082EDEE, 0x2362F9DE},
		{"\x21\x43\x65", 0, 0x7E4A8634},
		{"\x21\x43", 0, 0xA0F7B07A},
		{"\x21", 0, 0x72661CF4},
		{"\x00\x00\x00\x00", 0, 0x2362F9DE},
		{"\x00\x00\x00", 0, 0x85F0B427},
		{"\x00\x00", 0, 0x30F4C306},
		{"\x00", 0, 0x514E28B7},
		{"aaaa", 0x9747b28c, 0x5A97808A},
		{"aaa", 0x9747b28c, 0x283E0130},
		{"aa", 0x9747b28c, 0x5D211726},
		{"a", 0x9747b28c, 0x7FA09EA6},
		{"abcd", 0x9747b28c, 0xF0478627},
		{"abc", 0x9747b28c, 0xC84A62DD},
		{"ab", 0x9747b28c, 0x74875592},
		{"Hello, world!", 0x9747b28c, 0x24884CBA},
		{"ππππππππ", 0x9747b28c, 0xD58063C1},
		{strings.Repeat("a", 256), 0x9747b28c, 0x37405BDC},
		{"The quick brown fox jumps over the lazy dog", 0x9747b28c, 0x2FA826CD},
	}
	for _, tt := range tests {
		if got := Sum32(tt.data, tt.seed); got != tt.want {
			t.Errorf("Sum32(%q, %#x) = %#x, want %#x", tt.data, tt.seed, got, tt.want)
		}
		if got := Sum32([]byte(tt.data), tt.seed); got != tt.want {
			t.Errorf("Sum32([]byte(%q), %#x) = %#x, want %#x", tt.data, tt.seed, got, tt.want)
		}
	}
}

func TestUint64MatchesBytes(t *testing.T) {
	for _, v := range []uint64{0, 1, 42, math.MaxUint64, 1 << 63, 0x0123456789abcdef} {
		b := binary.LittleEndian.AppendUint64(nil, v)
		if got, want := Uint64(v), Sum32(b, 0); got != want {
			t.Errorf("Uint64(%#x) = %#x, want Sum32 of its bytes %#x", v, got, want)
		}
	}
}
