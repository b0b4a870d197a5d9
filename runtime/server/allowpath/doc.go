// Package allowpath checks the file system paths that a server's clients
// choose (file sources and sinks, checkpoint and savepoint directories,
// restore paths) against the roots the server's operator allowed, so that a
// client cannot make the server read or write where its user may but the
// client should not.
//
// A path is resolved the way the kernel will resolve it: relative to the
// server's working directory, every symbolic link that exists followed
// (also dangling ones, whose target a write would create), ".." applied
// after the links before it; only the part that does not exist yet is taken
// as written. It is allowed when the result is a root or lies under one.
// A link changed between the check and the use is not caught: the roots
// are meant to be directories the clients cannot change themselves.
//
// Object storage paths (s3://bucket/key, checkpoints and savepoints on S3)
// are allowed only under an s3://bucket/prefix root (the key cleaned, then
// compared segment by segment), or when every path is: the server's S3
// credentials must not reach every bucket they can for any client.
//
// This package must not depend on the job service or the runtime.
package allowpath
