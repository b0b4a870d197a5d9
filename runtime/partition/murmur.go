package partition

import "math/bits"

// MurmurHash3 x86_32 (Austin Appleby, public domain), the function behind
// Flink's MathUtils.murmurHash and Python's mmh3.hash. Written here from the
// published algorithm; its output for a given input never changes.

const (
	murmurC1 = 0xcc9e2d51
	murmurC2 = 0x1b873593
)

func mixK1(k uint32) uint32 {
	k *= murmurC1
	k = bits.RotateLeft32(k, 15)
	return k * murmurC2
}

func mixH1(h, k uint32) uint32 {
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

func fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// murmur3 returns the MurmurHash3 x86_32 hash of data with the given seed.
func murmur3[T ~string | ~[]byte](data T, seed uint32) uint32 {
	h := seed
	n := len(data)
	i := 0
	for ; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		h = mixH1(h, mixK1(k))
	}
	var k uint32
	switch n - i {
	case 3:
		k ^= uint32(data[i+2]) << 16
		fallthrough
	case 2:
		k ^= uint32(data[i+1]) << 8
		fallthrough
	case 1:
		k ^= uint32(data[i])
		h ^= mixK1(k)
	}
	h ^= uint32(n)
	return fmix32(h)
}

// murmur3Uint64 is murmur3 (seed 0) of the eight little-endian bytes of v.
func murmur3Uint64(v uint64) uint32 {
	h := mixH1(0, mixK1(uint32(v)))
	h = mixH1(h, mixK1(uint32(v>>32)))
	h ^= 8
	return fmix32(h)
}
