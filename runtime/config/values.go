package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// check returns what is wrong with value for k, or "".
func (k Key) check(value string) string {
	v := strings.TrimSpace(value)
	if v == "" {
		if k.Type == TypePath || k.Type == TypeString {
			return "" // blank: no path, as unset
		}
		return "empty; expected " + k.Expected() + " (remove the key to take the default)"
	}
	bad := "expected " + k.Expected()
	switch k.Type {
	case TypeInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || !k.inBounds(float64(n)) {
			return bad
		}
	case TypeFloat:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || !k.inBounds(f) {
			return bad
		}
	case TypeBool:
		if _, err := strconv.ParseBool(v); err != nil {
			return bad
		}
	case TypeDuration:
		d, err := ParseDuration(v)
		if err != nil || !k.inBounds(float64(d)) {
			return bad
		}
	case TypeEnum:
		if _, ok := k.enumValue(v); !ok {
			return bad
		}
	}
	return ""
}

// inBounds says whether x (a duration in nanoseconds) is within Min and
// Max, which parse in the key's type.
func (k Key) inBounds(x float64) bool {
	bound := func(s string) (float64, bool) {
		if s == "" {
			return 0, false
		}
		if k.Type == TypeDuration {
			d, err := ParseDuration(s)
			return float64(d), err == nil
		}
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	if lo, ok := bound(k.Min); ok && x < lo {
		return false
	}
	if hi, ok := bound(k.Max); ok && x > hi {
		return false
	}
	return true
}

// enumValue returns the value or alias of an enum that v spells, in any
// case.
func (k Key) enumValue(v string) (string, bool) {
	for _, allowed := range k.Values {
		if strings.EqualFold(v, allowed) {
			return allowed, true
		}
	}
	for _, alias := range k.Aliases {
		if strings.EqualFold(v, alias) {
			return alias, true
		}
	}
	return "", false
}

// durationUnits maps Flink's duration unit labels (TimeUtils.parseDuration:
// singular and plural spellings) to their length.
var durationUnits = func() map[string]time.Duration {
	units := map[string]time.Duration{
		"d": 24 * time.Hour, "h": time.Hour, "min": time.Minute, "s": time.Second,
		"ms": time.Millisecond, "µs": time.Microsecond, "μs": time.Microsecond, "us": time.Microsecond,
		"ns": time.Nanosecond,
	}
	// Labels that also take a plural "s", as Flink's.
	for label, unit := range map[string]time.Duration{
		"day": 24 * time.Hour, "hour": time.Hour, "minute": time.Minute, "sec": time.Second,
		"second": time.Second, "milli": time.Millisecond, "millisecond": time.Millisecond,
		"micro": time.Microsecond, "microsecond": time.Microsecond, "nano": time.Nanosecond,
		"nanosecond": time.Nanosecond,
	} {
		units[label] = unit
		units[label+"s"] = unit
	}
	return units
}()

// durationSyntax is the help every refused duration carries.
const durationSyntax = `write milliseconds or a number with a unit, as "500 ms", "10 s", "5 min", "1 h", "2 d" ` +
	`(units: ms/milli(s)/millisecond(s), s/sec(s)/second(s), min/minute(s), h/hour(s), d/day(s), µs, ns)`

// ParseDuration reads Flink's duration syntax (TimeUtils.parseDuration): a
// number of milliseconds, or a number with a unit label ("10 s", "10s",
// "5 min", "1 hour", "2 days"; every label Flink accepts, in any case), or a
// Go duration ("1m30s"). Unlike Flink it also takes a decimal number
// ("1.5 s"). Negative durations and durations beyond Go's range (about 292
// years) are refused.
func ParseDuration(v string) (time.Duration, error) {
	s := strings.ToLower(strings.TrimSpace(v))
	numberEnd := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if numberEnd < 0 {
		numberEnd = len(s)
	}
	if number, label := s[:numberEnd], strings.TrimSpace(s[numberEnd:]); number != "" {
		unit, known := durationUnits[label]
		if label == "" {
			unit, known = time.Millisecond, true
		}
		if f, err := strconv.ParseFloat(number, 64); err == nil && known {
			// Rounded to the nanosecond: 0.57 * 6e10 is 34199999999.999996 in
			// floating point, and "0.57 min" means 34.2 s.
			length := math.Round(f * float64(unit))
			if length >= math.MaxInt64 {
				return 0, errors.New("duration too large: at most about 292 years (" + time.Duration(math.MaxInt64).String() + ")")
			}
			return time.Duration(length), nil
		}
	}
	if d, err := time.ParseDuration(strings.ReplaceAll(s, " ", "")); err == nil && d >= 0 {
		return d, nil
	}
	return 0, errors.New("not a duration: " + durationSyntax)
}
