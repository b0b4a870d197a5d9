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
		if k.Type == TypePath {
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

// ParseDuration reads Flink's duration syntax: a number of milliseconds, or
// a number with a unit (ms, s, min, h, d; "10 s", "10s"), or a Go duration
// ("1m30s"). Negative durations are refused.
func ParseDuration(v string) (time.Duration, error) {
	s := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(v), " ", ""))
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 {
		return time.Duration(n) * time.Millisecond, nil
	}
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"ms", time.Millisecond}, {"min", time.Minute}, {"s", time.Second}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			if f, err := strconv.ParseFloat(num, 64); err == nil && f >= 0 && !math.IsInf(f, 0) {
				return time.Duration(f * float64(u.unit)), nil
			}
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, nil
	}
	return 0, errors.New(`not a duration: write milliseconds or a number with a unit, as "500 ms", "10 s", "1 min"`)
}
