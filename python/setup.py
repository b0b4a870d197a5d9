"""Build steps of the flinkgo wheel: the Go runtime binary travels inside it.

Everything else about the package is in pyproject.toml. This file adds three commands:

- ``build_py`` also runs ``go build ./cmd/flinkgo`` (static, ``CGO_ENABLED=0``,
  stripped) into ``flinkgo/_bin/flinkgo`` of the build directory, so the binary lands in
  the wheel and never in the source tree. Editable installs (``pip install -e``) skip it:
  a source checkout builds the binary on demand (``flinkgo._runtime``). Without Go the
  build fails with a message saying that Go 1.26+ is needed.
- ``sdist`` adds the Go sources the binary needs (``go.mod``, ``go.sum`` and every
  non-test ``.go`` file of the module, outside ``python/``, ``examples/``,
  ``integration/`` and ``testdata/``) under ``_gosrc/``, so a wheel can be built from the
  sdist (``python -m build`` does exactly that).
- ``bdist_wheel`` marks the wheel as platform-specific (``py3-none-<platform>``): it
  holds a native binary but no Python extension, so any Python 3 of that platform can
  use it.

The Go module is found at ``..`` (a checkout: this file lives in ``python/``) or at
``_gosrc`` (an unpacked sdist). ``FLINKGO_GO`` names the ``go`` command to use.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = Path(__file__).resolve().parent
GO_SOURCES = "_gosrc"
EXE = ".exe" if sys.platform == "win32" else ""
NEEDS = "building the flinkgo wheel needs Go 1.26 or newer (https://go.dev/dl/)"
# Directories of the Go module that the binary does not need: at the top, and anywhere.
SKIP_TOP = {"python", "examples", "integration", GO_SOURCES}
SKIP_ANY = {"testdata", "node_modules"}


def go_module() -> Path | None:
    """Return the root of the Go module holding cmd/flinkgo, or None."""
    for root in (HERE.parent, HERE / GO_SOURCES):
        if (root / "go.mod").is_file() and (root / "cmd" / "flinkgo").is_dir():
            return root
    return None


def go_files(root: Path) -> list[Path]:
    """Return the files of the Go module at `root` that building the binary reads."""
    files = [root / n for n in ("go.mod", "go.sum") if (root / n).is_file()]
    for dirpath, dirs, names in os.walk(root):
        at_top = Path(dirpath) == root
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith((".", "_")) and d not in SKIP_ANY and not (at_top and d in SKIP_TOP)
        )
        files.extend(
            Path(dirpath) / n
            for n in sorted(names)
            if n.endswith(".go") and not n.endswith("_test.go")
        )
    return files


def build_runtime(out_dir: Path) -> Path:
    """Build ./cmd/flinkgo into `out_dir`; exit with a clear message when it cannot."""
    root = go_module()
    if root is None:
        sys.exit(
            f"error: the Go sources of the flinkgo runtime are not found (looked for "
            f"{HERE.parent / 'go.mod'} and {HERE / GO_SOURCES / 'go.mod'}); build the wheel "
            "from a flinkgo source checkout or sdist"
        )
    go = os.environ.get("FLINKGO_GO") or shutil.which("go")
    if not go:
        sys.exit(f"error: {NEEDS}, and `go` is not on PATH (or set FLINKGO_GO)")
    out_dir.mkdir(parents=True, exist_ok=True)
    binary = out_dir.resolve() / f"flinkgo{EXE}"
    env = dict(os.environ, CGO_ENABLED="0")
    cmd = [go, "build", "-trimpath", "-ldflags=-s -w", "-o", str(binary), "./cmd/flinkgo"]
    print(f"flinkgo: {' '.join(cmd)} (in {root})", flush=True)
    try:
        done = subprocess.run(cmd, cwd=root, env=env, check=False)
    except OSError as e:
        sys.exit(f"error: {NEEDS}; running {go} failed: {e}")
    if done.returncode != 0:
        sys.exit(f"error: `go build ./cmd/flinkgo` failed (exit status {done.returncode}); {NEEDS}")
    return binary


class BuildPy(build_py):
    """build_py, plus the runtime binary in flinkgo/_bin (not for editable installs)."""

    def run(self) -> None:
        """Copy the Python files, then build the binary next to them."""
        super().run()
        if getattr(self, "editable_mode", False):
            return
        build_runtime(Path(self.build_lib) / "flinkgo" / "_bin")


class SDist(sdist):
    """sdist, plus the Go sources under _gosrc."""

    def make_release_tree(self, base_dir: str, files: list[str]) -> None:
        """Lay out the sdist's files, then copy the Go sources into it."""
        super().make_release_tree(base_dir, files)
        root = go_module()
        if root is None:
            sys.exit("error: the Go sources of the flinkgo runtime are not found")
        for f in go_files(root):
            dest = Path(base_dir) / GO_SOURCES / f.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)


class BdistWheel(bdist_wheel):
    """bdist_wheel tagged py3-none-<platform>: a native binary, no Python ABI."""

    def get_tag(self) -> tuple[str, str, str]:
        """Return py3, none and the platform of this build."""
        _, _, platform = super().get_tag()
        return "py3", "none", platform


class BinaryDistribution(Distribution):
    """A distribution with native code, so the wheel's files go to platlib (its root)."""

    def has_ext_modules(self) -> bool:
        """Say yes: the runtime binary is native code."""
        return True


setup(
    distclass=BinaryDistribution,
    cmdclass={"build_py": BuildPy, "sdist": SDist, "bdist_wheel": BdistWheel},
)
