// Package logging builds the one *slog.Logger a flinkgo process uses, from
// a level and a format chosen by command-line flags or environment
// variables, and gives libraries a logger that discards when they were
// given none.
//
// The logger is passed down explicitly (binary options → job → task →
// operator, state, plugin runner); nothing here sets or reads slog's
// default logger, and libraries must not either.
//
// This package depends on the standard library only.
package logging
