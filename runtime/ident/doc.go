// Package ident names one running operator subtask the same way in every
// log line and error: its job, attempt, job vertex (the chain it runs in),
// operator name and uid, and subtask index.
//
// A Subtask is a value: slog resolves it (LogValue) to those attributes,
// inlined when logged under the empty key (logger.With(ident.Attr(id))),
// and String is the prefix of the errors that name it.
//
// This package must not import anything but the standard library.
package ident
