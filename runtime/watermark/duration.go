package watermark

import (
	"fmt"
	"strings"
	"time"

	"github.com/flinkgo/flinkgo/runtime/config"
)

// ParseMillis reads a duration in Flink's syntax ("10 s", "500 ms",
// "5 min", "1 h", "2 d"; config.ParseDuration) as event-time milliseconds.
// A leading minus sign is allowed, for window offsets ("-8 h"); callers of
// durations that must be positive check the sign. A duration that is not a
// whole number of milliseconds is refused: event time has no finer unit, and
// rounding would move windows silently.
func ParseMillis(s string) (int64, error) {
	text := strings.TrimSpace(s)
	negative := strings.HasPrefix(text, "-")
	d, err := config.ParseDuration(strings.TrimPrefix(text, "-"))
	if err != nil {
		return 0, fmt.Errorf("watermark: duration %q: %w", s, err)
	}
	if d%time.Millisecond != 0 {
		return 0, fmt.Errorf("watermark: duration %q is %v, not a whole number of milliseconds (event time is in milliseconds)", s, d)
	}
	ms := d.Milliseconds()
	if negative {
		ms = -ms
	}
	return ms, nil
}
