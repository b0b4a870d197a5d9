"""Runtime endpoint addresses: ``unix:///path/to.sock`` or ``host:port``.

Checked when an :class:`~flinkgo.Environment` is made, so this module imports only the
standard library and flinkgo.exceptions (not grpc).
"""

from __future__ import annotations

from flinkgo.exceptions import InvalidArgumentError

__all__ = ["check_endpoint"]


def check_endpoint(endpoint: object) -> str:
    """Return `endpoint` if it is ``unix:///path`` or ``host:port``; else raise.

    Raises :class:`~flinkgo.exceptions.InvalidArgumentError` (a ValueError).
    """
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise InvalidArgumentError(
            f"endpoint: expected 'host:port' or 'unix:///path', got {endpoint!r}"
        )
    text = endpoint.strip()
    if text.startswith("unix:"):
        if not text[len("unix:") :].lstrip("/"):
            raise InvalidArgumentError(f"endpoint: {endpoint!r} names no socket path")
        return text
    if "://" in text:
        raise InvalidArgumentError(
            f"endpoint: {endpoint!r} has a scheme; write 'host:port' (e.g. 'localhost:8081') "
            "or 'unix:///path/to.sock'"
        )
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise InvalidArgumentError(
            f"endpoint: {endpoint!r} is not 'host:port' (e.g. 'localhost:8081') or "
            "'unix:///path/to.sock'"
        )
    return text
