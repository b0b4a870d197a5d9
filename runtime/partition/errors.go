package partition

import "errors"

// ErrInvalidConfig wraps every error of New: the Config cannot describe a
// partitioner (no channels, a hash partitioner without key columns, ...).
// It is a planning bug or a user's mistake; report it and do not start the
// job.
var ErrInvalidConfig = errors.New("partition: invalid config")

// ErrUnsupportedKeyType is returned by HashKeys, KeyGroups and a hash
// partitioner's Split when a key column has a type that has no stable hash
// (lists, structs, decimals, ...). The key is unusable as it is: the user
// should key by another column or cast it.
var ErrUnsupportedKeyType = errors.New("partition: unsupported key column type")

// ErrInvalidChannel is returned by a custom partitioner's Split when its
// function returns the wrong number of channels or a channel out of range.
// It is a bug in the user's function; fail the task.
var ErrInvalidChannel = errors.New("partition: invalid channel")
