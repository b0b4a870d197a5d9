"""The Unix-socket transport of the batch stream.

The same ``ProcessRequest``/``ProcessResponse`` messages as the ``Process``
RPC, each framed by a 4-byte little-endian length. grpcio's streaming costs
about 0.4 ms per message on a 2-core machine; a framed socket about 15 µs.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from flinkgo._proto import worker_pb2
from flinkgo.exceptions import FlinkgoError
from flinkgo.worker.sharedmem import SharedSlots

_HEADER = struct.Struct("<I")


class FrameTooLarge(FlinkgoError):
    """A frame's length is over the message limit both sides agreed on."""


def read_frames(conn: socket.socket, max_bytes: int) -> Iterator[worker_pb2.ProcessRequest]:
    """Yield requests until the host closes its write side."""
    header = bytearray(_HEADER.size)
    while True:
        if not _read_exactly(conn, memoryview(header)):
            return
        (length,) = _HEADER.unpack(header)
        if length > max_bytes:
            raise FrameTooLarge(f"frame of {length} bytes is over the {max_bytes}-byte limit")
        body = bytearray(length)
        if not _read_exactly(conn, memoryview(body)):
            raise ConnectionError("the host closed the data socket in the middle of a frame")
        yield worker_pb2.ProcessRequest.FromString(bytes(body))


def _read_exactly(conn: socket.socket, view: memoryview) -> bool:
    """Fill view; return False on a clean end of stream before any byte."""
    got = 0
    while got < len(view):
        n = conn.recv_into(view[got:])
        if n == 0:
            if got == 0:
                return False
            raise ConnectionError("the host closed the data socket in the middle of a frame")
        got += n
    return True


def write_frame(conn: socket.socket, response: worker_pb2.ProcessResponse) -> None:
    """Send one response (scatter write: the payload is not copied again)."""
    data = response.SerializeToString()
    header = _HEADER.pack(len(data))
    sent = conn.sendmsg([header, data])
    if sent < len(header) + len(data):
        conn.sendall((header + data)[sent:])


class DataSocket:
    """Listens once on a socket path and serves one batch stream on it."""

    def __init__(self, path: str, max_bytes: int, log: Any, shared: tuple[int, int] | None = None):
        """Listen on path; with shared (slots, slot_bytes), for the shared-memory transport."""
        self.path = path
        self._max_bytes = max_bytes
        self._log = log
        self._shared = shared
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        os.chmod(path, 0o600)
        self._listener.listen(1)

    def serve_in_background(
        self,
        serve: Callable[[Iterable[worker_pb2.ProcessRequest], SharedSlots | None], Iterator[Any]],
    ) -> None:
        """Accept the host's connection and run serve over it on a thread."""
        threading.Thread(target=self._run, args=(serve,), name="flinkgo-data", daemon=True).start()

    def _run(self, serve: Callable[..., Iterator[Any]]) -> None:
        try:
            conn, _ = self._listener.accept()
        except OSError:
            return
        finally:
            self._listener.close()
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
        slots = None
        with conn:
            try:
                if self._shared is not None:
                    slots = SharedSlots.receive(conn, *self._shared)
                for response in serve(read_frames(conn, self._max_bytes), slots):
                    write_frame(conn, response)
            except (ConnectionError, BrokenPipeError) as e:
                # The host aborted the stream: it is canceling this worker.
                self._log.debug("data socket closed by the host: %s", e)
            except FrameTooLarge as e:
                self._log.warning("data socket closed: %s", e)
            finally:
                if slots is not None:
                    slots.close()
