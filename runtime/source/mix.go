package source

// Generated values (connectors/datagen, connectors/nexmark) are a pure
// function of (seed, row, column), so a run is reproducible at any parallelism and tests can compute the expected
// data themselves:
//
//	integers: the row index
//	floats:   uniform in [0, 1): top 53 bits of Mix(seed, row, column) / 2^53
//	          (float16: that value rounded to half precision)
//	bool:     lowest bit of Mix(seed, row, column)
//	strings and binary: "<column name>-<row index>"
//	timestamps, dates, times and durations: the row index in the type's unit
//	decimals: the row index (its unscaled value is row * 10^scale)
//
// Mix is splitmix64 over seed ^ (row * 0x9E3779B97F4A7C15) ^ (column << 32).
func Mix(seed, row int64, column int) uint64 {
	z := uint64(seed) ^ uint64(row)*0x9E3779B97F4A7C15 ^ uint64(column)<<32
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}
