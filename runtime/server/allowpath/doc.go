// Package allowpath checks the file system paths that a server's clients
// choose (file sources and sinks, checkpoint and savepoint directories,
// restore paths) against the roots the server's operator allowed, so that a
// client cannot make the server read or write where its user may but the
// client should not.
//
// Each root is opened once, when the server starts. A client's path is
// matched to a root by name (absolute, ".." applied as written; the root
// may be named as given or with its links resolved) and then opened from
// the root's descriptor with package beneath: no symbolic link below a
// root is followed, even one that stays inside it, and no ".." leaves it.
// Check applies this rule at submission, for an early error; Open and Dir
// apply it again at the use, so that a directory swapped for a link
// between the two is refused there (or, for a directory already opened,
// does not move the work in it).
//
// Object storage paths (s3://bucket/key, checkpoints and savepoints on S3)
// are allowed only under an s3://bucket/prefix root (the key cleaned, then
// compared segment by segment), or when every path is: the server's S3
// credentials must not reach every bucket they can for any client.
//
// This package must not depend on the job service or the runtime.
package allowpath
