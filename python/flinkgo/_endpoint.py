"""Runtime endpoint addresses: ``unix:///path/to.sock`` or ``host:port``.

Checked when an :class:`~flinkgo.Environment` is made, so this module imports only the
standard library (not grpc).
"""

from __future__ import annotations

__all__ = ["check_endpoint"]


def check_endpoint(endpoint: object) -> str:
    """Return `endpoint` if it is ``unix:///path`` or ``host:port``, else raise ValueError."""
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise ValueError(f"endpoint: expected 'host:port' or 'unix:///path', got {endpoint!r}")
    text = endpoint.strip()
    if text.startswith("unix:"):
        if not text[len("unix:") :].lstrip("/"):
            raise ValueError(f"endpoint: {endpoint!r} names no socket path")
        return text
    if "://" in text:
        raise ValueError(
            f"endpoint: {endpoint!r} has a scheme; write 'host:port' (e.g. 'localhost:8081') "
            "or 'unix:///path/to.sock'"
        )
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ValueError(
            f"endpoint: {endpoint!r} is not 'host:port' (e.g. 'localhost:8081') or "
            "'unix:///path/to.sock'"
        )
    return text
