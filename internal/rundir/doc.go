// Package rundir gives each runtime process one private temporary directory
// and removes the directories of runtimes that died without removing their
// own.
//
// A runtime puts everything it creates under the temp dir into its
// directory (it points $TMPDIR there, so go-plugin's plugin-dir* socket
// directories, the local state stores flinkgo-state-*, and what its Python
// workers create with tempfile all land in it), and removes it when it
// ends. A runtime that is SIGKILLed cannot; the next one to start removes
// it (Sweep).
//
// Ownership is a lock, not a pid: the directory holds owner.lock, which its
// owner keeps open with an exclusive flock(2) for its whole life. The
// kernel drops the lock when the owner dies, however it dies, so a lock
// that can be taken means a dead owner, and a reused pid never makes a dead
// owner look alive nor a live one dead. The file also holds the owner's pid,
// for people. A live owner's directory is never removed. The Python
// client's directory of the embedded runtime's socket follows the same
// convention (python/flinkgo/_runtime.py).
//
// Limits: flock is per host; a temp dir shared over NFS is not supported.
package rundir
