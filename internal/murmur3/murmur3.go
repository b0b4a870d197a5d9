// Package murmur3 is MurmurHash3 x86_32 (Austin Appleby, public domain), the
// function behind Flink's MathUtils.murmurHash and Python's mmh3.hash,
// written here from the published algorithm. Checkpoints store state by key
// group and key groups come from these hashes, so the output for a given
// input never changes.
//
// Besides the whole hash (Sum32, Uint64) it exports the three steps the
// algorithm is made of (MixK1 and MixH1 for one 4-byte body round, Fmix32
// for the finalizer), for callers that fold several hashes into one or hash
// a single int as Flink does.
//
// Leaf package: it depends on math/bits only.
package murmur3

import "math/bits"

const (
	c1 = 0xcc9e2d51
	c2 = 0x1b873593
)

// MixK1 scrambles one 4-byte block before it is mixed into the hash:
// k *= 0xcc9e2d51, rotl 15, k *= 0x1b873593.
func MixK1(k uint32) uint32 {
	k *= c1
	k = bits.RotateLeft32(k, 15)
	return k * c2
}

// MixH1 mixes a scrambled block k into the running hash h:
// h ^= k, rotl 13, h*5 + 0xe6546b64.
func MixH1(h, k uint32) uint32 {
	h ^= k
	h = bits.RotateLeft32(h, 13)
	return h*5 + 0xe6546b64
}

// Fmix32 is the finalizer that spreads every input bit over the output.
func Fmix32(h uint32) uint32 {
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// Sum32 returns the MurmurHash3 x86_32 hash of data with the given seed.
func Sum32[T ~string | ~[]byte](data T, seed uint32) uint32 {
	h := seed
	n := len(data)
	i := 0
	for ; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		h = MixH1(h, MixK1(k))
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
		h ^= MixK1(k)
	}
	h ^= uint32(n)
	return Fmix32(h)
}

// Uint64 is Sum32 (seed 0) of the eight little-endian bytes of v.
func Uint64(v uint64) uint32 {
	h := MixH1(0, MixK1(uint32(v)))
	h = MixH1(h, MixK1(uint32(v>>32)))
	h ^= 8
	return Fmix32(h)
}
