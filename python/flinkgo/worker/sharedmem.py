"""The worker's side of the shared-memory batch transport.

The host creates a memfd, sends it on the data socket (one byte with the
descriptor as SCM_RIGHTS) and writes each batch's Arrow IPC stream into an
input slot of it; the worker reads the batch in place (pyarrow over a
memoryview of the mapping, no copy) and writes the result's stream into the
output slot of the same number. Only slot numbers and lengths travel on the
socket. worker.proto describes the layout.

A UDF may keep what it was given (a pandas Series that views the input, a
pyarrow array) beyond its call. The worker notices (the slot's memoryview
still has exports once the batch is done) and tells the host, which then
never writes that slot again: nothing the UDF holds changes under it.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import socket

import pyarrow as pa

from flinkgo._proto import worker_pb2
from flinkgo.worker.chain import write_batch

# Room for the stream's schema and framing, which get_record_batch_size does
# not count: a result that surely does not fit is not tried.
_SCHEMA_ROOM = 1024


def _write_stream(target: memoryview, out: pa.RecordBatch) -> int:
    """Write out as an Arrow IPC stream at the start of target; return its length."""
    sink = pa.FixedSizeBufferWriter(pa.py_buffer(target))
    with pa.ipc.new_stream(sink, out.schema) as writer:
        writer.write_batch(out)
    return int(sink.tell())


class SharedSlots:
    """The worker's mapping of the host's shared region."""

    def __init__(self, fd: int, slots: int, slot_bytes: int):
        self.slots = slots
        self.slot_bytes = slot_bytes
        try:
            self._map = mmap.mmap(fd, 2 * slots * slot_bytes, mmap.MAP_SHARED)
        finally:
            os.close(fd)  # the mapping keeps the memory
        self._view = memoryview(self._map)

    @classmethod
    def receive(cls, conn: socket.socket, slots: int, slot_bytes: int) -> SharedSlots | None:
        """Take the region's descriptor, the first thing the host sends.

        None when the host could make no region: its byte came alone, and
        every payload travels inline.
        """
        data, fds, _, _ = socket.recv_fds(conn, 1, 1)
        if len(data) != 1 or len(fds) > 1:
            for fd in fds:
                os.close(fd)
            raise ConnectionError("the host did not send the shared-memory region first")
        if not fds:
            return None
        return cls(fds[0], slots, slot_bytes)

    def input_view(self, batch: worker_pb2.Batch) -> memoryview:
        """Return the input slot's bytes of batch; the caller releases the view."""
        length = batch.shared_length
        if not 0 < length <= self.slot_bytes or not 0 <= batch.slot < self.slots:
            raise ValueError(
                f"the host sent slot {batch.slot} with {length} bytes; "
                f"the region has {self.slots} slots of {self.slot_bytes} bytes"
            )
        start = batch.slot * self.slot_bytes
        return self._view[start : start + length]

    def write_result(self, slot: int, out: pa.RecordBatch) -> worker_pb2.BatchResult:
        """Write out into the output slot, or inline when it does not fit."""
        if pa.ipc.get_record_batch_size(out) + _SCHEMA_ROOM > self.slot_bytes:
            return worker_pb2.BatchResult(arrow_ipc=write_batch(out))
        start = (self.slots + slot) * self.slot_bytes
        target = self._view[start : start + self.slot_bytes]
        try:
            length = _write_stream(target, out)
        except OSError:  # "Write out of bounds": a large schema
            return worker_pb2.BatchResult(arrow_ipc=write_batch(out))
        finally:
            # Only an exception's traceback can still hold the writer; the
            # view then goes with it.
            with contextlib.suppress(BufferError):
                target.release()
        return worker_pb2.BatchResult(shared_length=length)

    @staticmethod
    def release(view: memoryview) -> bool:
        """Release a batch's input view; False when something still uses it."""
        try:
            view.release()
            return True
        except BufferError:
            pass
        gc.collect()  # a reference cycle may hold the last user
        try:
            view.release()
            return True
        except BufferError:
            return False

    def close(self) -> None:
        """Unmap, unless a UDF still holds memory of it (then its last user does)."""
        self._view.release()
        with contextlib.suppress(BufferError):
            self._map.close()
