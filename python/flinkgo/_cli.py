"""The ``flinkgo`` command that ``pip install flinkgo`` puts on the PATH.

It runs the runtime binary (:func:`flinkgo._runtime.find_binary`: the one inside the
installed package, or in a source checkout the cached build, built first when stale)
with the command line's arguments, so ``flinkgo run``, ``flinkgo list``, ``flinkgo
savepoint`` and the rest work right after the install. ``flinkgo run`` starts pipeline
files with ``$FLINKGO_PYTHON``; unless it is set, that is this interpreter, the one that
has this flinkgo.
"""

from __future__ import annotations

import os
import sys

from flinkgo._runtime import find_binary
from flinkgo.job import RuntimeStartError

__all__ = ["main"]


def main() -> None:
    """Replace this process with the runtime binary, given this command line's arguments."""
    try:
        binary = find_binary()
    except RuntimeStartError as e:
        print(f"flinkgo: {e}", file=sys.stderr)
        sys.exit(1)
    env = dict(os.environ)
    env.setdefault("FLINKGO_PYTHON", sys.executable)
    os.execve(binary, [binary, *sys.argv[1:]], env)
