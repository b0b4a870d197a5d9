// Package beneath opens the paths a server's clients name beneath the
// directory that allows them, so that a symbolic link swapped in after the
// allow-list check cannot send the server elsewhere.
//
// A Root is an allowed directory opened once. Its Open and Dir resolve a
// relative path from that open directory, never by name again, and refuse
// every symbolic link and every ".." that leaves it: on Linux 5.6+ with
// openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), elsewhere (or where
// openat2 is missing) one component at a time with O_NOFOLLOW. A Dir is a
// directory opened that way and kept open; its Path names it for the code
// that works inside it by name (Pebble, renames of part files):
// /proc/self/fd/N on Linux, which the kernel resolves through the open
// descriptor, so a later swap of the directory or of one of its parents
// does not move that work. Elsewhere Path is the name as checked.
//
// Dir.ShowNames turns the /proc/self/fd/N of a kept directory back into
// its name in errors. OpenIn opens a file beneath a directory with the
// same rule, whatever the allow-list (the files a snapshot's _metadata
// lists), and LinkOpened hard-links an open file through its descriptor.
//
// Paths is what the runtime's file sources, sinks, savepoints, checkpoint
// storage and restore path take; a nil
// Paths opens every path as named (the embedded runtime, whose only client
// is its own user).
//
// This package must not depend on anything but the standard library and
// golang.org/x/sys.
package beneath
