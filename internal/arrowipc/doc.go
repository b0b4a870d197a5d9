// Package arrowipc turns single Arrow record batches and schemas into
// Arrow IPC streams and back: the form they take on the worker protocol,
// in the job plan and on the job service.
//
// A batch travels as a complete IPC stream (schema, one batch, end marker):
// a few hundred bytes more than the bare batch, in exchange for messages
// that pyarrow and arrow-go read with no other context.
//
// Leaf package: it knows Arrow only.
package arrowipc
