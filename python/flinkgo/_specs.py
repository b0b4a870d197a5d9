"""Write the spec of every UDF a Python file declares (for Go tools and tests).

``python -m flinkgo._specs FILE OUT_DIR`` runs FILE and writes each
:class:`~flinkgo.UserDefinedFunction` it defines at top level as ``OUT_DIR/<name>.pb``,
a serialized ``UdfSpec``. The file runs under a module name that is not importable, so
cloudpickle ships its functions by value, as a user's script is shipped.
"""

from __future__ import annotations

import os
import runpy
import sys


def write_specs(path: str, out_dir: str) -> list[str]:
    """Run ``path`` and write its UDF specs into ``out_dir``; return the names."""
    from flinkgo.udfs import UserDefinedFunction

    namespace = runpy.run_path(path, run_name="__flinkgo_udfs__")
    names = []
    for value in namespace.values():
        if isinstance(value, UserDefinedFunction):
            with open(os.path.join(out_dir, value.name + ".pb"), "wb") as f:
                f.write(value.to_bytes())
            names.append(value.name)
    return names


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python -m flinkgo._specs FILE OUT_DIR")
    write_specs(sys.argv[1], sys.argv[2])
