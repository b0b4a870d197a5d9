package logging

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// Environment variables that choose the level and format when the
// corresponding flag is not given.
const (
	LevelEnv  = "FLINKGO_LOG_LEVEL"
	FormatEnv = "FLINKGO_LOG_FORMAT"
)

// Format is how records are written: key=value text or one JSON object per
// line.
type Format string

const (
	FormatText Format = "text"
	FormatJSON Format = "json"
)

// Defaults when neither a flag nor an environment variable chooses. Warn
// keeps a runtime embedded in a Python session quiet unless something goes
// wrong; job lifecycle messages are at info.
const (
	DefaultLevel  = slog.LevelWarn
	DefaultFormat = FormatText
)

// Config is a parsed level and format.
type Config struct {
	Level  slog.Level
	Format Format
}

// ParseLevel reads debug, info, warn or error (any case).
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
}

// ParseFormat reads text or json (any case).
func ParseFormat(s string) (Format, error) {
	switch f := Format(strings.ToLower(strings.TrimSpace(s))); f {
	case FormatText, FormatJSON:
		return f, nil
	}
	return "", fmt.Errorf("log format %q: want text or json", s)
}

// Resolve picks the level and the format: a non-empty flag value wins over
// the environment variable (read with getenv, normally os.Getenv), which
// wins over the default. An invalid value is an error naming where it came
// from, never a silent fallback.
func Resolve(levelFlag, formatFlag string, getenv func(string) string) (Config, error) {
	cfg := Config{Level: DefaultLevel, Format: DefaultFormat}
	if s, from := pick(levelFlag, "--log-level", LevelEnv, getenv); s != "" {
		l, err := ParseLevel(s)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w", from, err)
		}
		cfg.Level = l
	}
	if s, from := pick(formatFlag, "--log-format", FormatEnv, getenv); s != "" {
		f, err := ParseFormat(s)
		if err != nil {
			return Config{}, fmt.Errorf("%s: %w", from, err)
		}
		cfg.Format = f
	}
	return cfg, nil
}

// pick returns the flag value if set, else the environment variable's, and
// says which one it was.
func pick(flagValue, flagName, env string, getenv func(string) string) (value, from string) {
	if flagValue != "" {
		return flagValue, flagName
	}
	if getenv != nil {
		if v := getenv(env); v != "" {
			return v, "$" + env
		}
	}
	return "", ""
}

// New returns a logger writing records of cfg.Level and above to w in
// cfg.Format.
func New(w io.Writer, cfg Config) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.Level}
	if cfg.Format == FormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// OrDiscard returns l, or a logger that drops everything when l is nil: a
// library given no logger stays silent.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
