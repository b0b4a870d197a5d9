// Package listen opens the job server's listener and decides who may call
// it. Plans carry pickled Python code that the server runs as its own user,
// so reaching the server is the same as running code as that user.
//
// Two kinds of listener:
//
//   - A Unix socket (the default). With no address, the socket is
//     flinkgo.sock in a private directory: $XDG_RUNTIME_DIR/flinkgo when
//     that variable is set, else flinkgo-<uid> under the temp dir. The
//     directory is created 0700 and must be owned by the server's user with
//     no access for others (a directory someone else made is refused, never
//     used). The socket's mode is set with chmod (0600, or 0660 with a
//     group), never left to the umask. Every accepted connection's peer is
//     checked with SO_PEERCRED (LOCAL_PEERCRED on macOS): the server's own
//     uid, root, or a member of the --allow-group group; any other peer is
//     closed with a log line before gRPC sees it. An existing file at the
//     socket's path is removed only when it is a socket nobody answers on
//     (a stale one); anything else is an error.
//   - TCP, only when an address host:port is given, and then every call
//     must carry the server's bearer token (metadata "authorization:
//     Bearer <token>", compared in constant time by the interceptors of
//     ServerOptions). The token is read from the token file, or generated
//     into it (0600) on first start; the default token file is "token" in
//     the private directory above. TLS (1.2 or newer) is on with a
//     certificate and key; with a client CA the client must present a
//     certificate signed by it (mutual TLS). An address that is not
//     loopback is refused without TLS, as the token would travel in clear.
//
// This package knows nothing of jobs; it must not depend on the job service
// or the runtime, only on gRPC.
package listen
