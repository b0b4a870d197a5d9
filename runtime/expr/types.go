package expr

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

var simpleTypes = map[string]arrow.DataType{
	"bool": arrow.FixedWidthTypes.Boolean, "boolean": arrow.FixedWidthTypes.Boolean,
	"int8": arrow.PrimitiveTypes.Int8, "int16": arrow.PrimitiveTypes.Int16,
	"int32": arrow.PrimitiveTypes.Int32, "int64": arrow.PrimitiveTypes.Int64,
	"uint8": arrow.PrimitiveTypes.Uint8, "uint16": arrow.PrimitiveTypes.Uint16,
	"uint32": arrow.PrimitiveTypes.Uint32, "uint64": arrow.PrimitiveTypes.Uint64,
	"halffloat": arrow.FixedWidthTypes.Float16, "float16": arrow.FixedWidthTypes.Float16,
	"float": arrow.PrimitiveTypes.Float32, "float32": arrow.PrimitiveTypes.Float32,
	"double": arrow.PrimitiveTypes.Float64, "float64": arrow.PrimitiveTypes.Float64,
	"string": arrow.BinaryTypes.String, "utf8": arrow.BinaryTypes.String,
	"large_string": arrow.BinaryTypes.LargeString, "large_utf8": arrow.BinaryTypes.LargeString,
	"binary": arrow.BinaryTypes.Binary, "large_binary": arrow.BinaryTypes.LargeBinary,
	"date32": arrow.FixedWidthTypes.Date32, "date32[day]": arrow.FixedWidthTypes.Date32,
	"date64": arrow.FixedWidthTypes.Date64, "date64[ms]": arrow.FixedWidthTypes.Date64,
	"null": arrow.Null,
}

var (
	timestampType = regexp.MustCompile(`^timestamp\[(s|ms|us|ns)(?:, tz=(.+))?\]$`)
	durationType  = regexp.MustCompile(`^duration\[(s|ms|us|ns)\]$`)
	timeUnits     = map[string]arrow.TimeUnit{"s": arrow.Second, "ms": arrow.Millisecond, "us": arrow.Microsecond, "ns": arrow.Nanosecond}
)

// ParseType reads an Arrow type name as pyarrow prints it (str(pa.int64())
// is "int64", str(pa.timestamp("us")) is "timestamp[us]").
func ParseType(name string) (arrow.DataType, error) {
	name = strings.TrimSpace(name)
	if t, ok := simpleTypes[name]; ok {
		return t, nil
	}
	if m := timestampType.FindStringSubmatch(name); m != nil {
		return &arrow.TimestampType{Unit: timeUnits[m[1]], TimeZone: m[2]}, nil
	}
	if m := durationType.FindStringSubmatch(name); m != nil {
		return &arrow.DurationType{Unit: timeUnits[m[1]]}, nil
	}
	return nil, fmt.Errorf("expr: unknown Arrow type %q (examples: int64, double, string, bool, timestamp[us], duration[ms])", name)
}
