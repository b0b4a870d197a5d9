"""The package's module graph: no import cycles, and no module hidden by a name."""

import ast
import importlib
import sys
from pathlib import Path

import pytest

import flinkgo

PACKAGE_DIR = Path(flinkgo.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    # The generated protocol code is a leaf (it imports only itself and protobuf/grpc).
    return {
        module_name(p): p
        for p in sorted(PACKAGE_DIR.rglob("*.py"))
        if "_proto" not in p.relative_to(PACKAGE_DIR).parts
    }


def imported(name: str, path: Path, known: set[str]) -> set[str]:
    """The package's modules that `name` imports anywhere: top level, in functions, or
    under ``if TYPE_CHECKING`` (a cycle of annotations is still a cycle of meaning).
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import mod` imports the module pkg.mod when there is one, else
            # a name defined by pkg.
            subs = [f"{base}.{a.name}" for a in node.names]
            targets = [t if t in known else base for t in subs]
        else:
            continue
        for target in targets:
            # A name inside a module counts as the module (import a.b.c names a.b.c).
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods) | {"flinkgo._proto"}  # the generated code, one leaf node
    edges = {name: imported(name, path, known) for name, path in mods.items()}
    edges["flinkgo._proto"] = set()
    return edges


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    # Depth-first search with colours; returns one cycle as a path, or None.
    white, grey, black = 0, 1, 2
    colour = dict.fromkeys(edges, white)
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        colour[node] = grey
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if colour.get(nxt, black) == grey:
                return stack[stack.index(nxt) :] + [nxt]
            if colour.get(nxt) == white:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        colour[node] = black
        return None

    for node in sorted(edges):
        if colour[node] == white:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_find_cycle_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_the_import_graph_sees_function_local_and_type_checking_imports():
    edges = graph()
    # dataframe imports the generated plan module only inside its methods; job_client
    # names the client only under TYPE_CHECKING.
    assert "flinkgo._proto" in edges["flinkgo.dataframe"]
    assert "flinkgo._client" in edges["flinkgo.job_client"]


def test_no_import_cycles():
    edges = graph()
    # The package's __init__ imports every public module; nothing inside imports it back.
    inner = {n: {t for t in ts if t != "flinkgo"} for n, ts in edges.items()}
    importers = sorted(n for n, ts in edges.items() if "flinkgo" in ts and n != "flinkgo")
    assert importers == [], f"modules importing the package itself (import a module): {importers}"
    cycle = find_cycle(inner)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_exceptions_is_a_leaf():
    assert graph()["flinkgo.exceptions"] == set()


@pytest.mark.parametrize("name", ["flinkgo.udf", "flinkgo.client"])
def test_renamed_modules_are_gone(name):
    # flinkgo.udf is the decorator only (the module is flinkgo.udfs); the gRPC client is
    # internal (flinkgo._client).
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(name)


def test_no_public_name_hides_a_module():
    for name in modules():
        parent, _, attr = name.rpartition(".")
        if not parent:
            continue
        owner = importlib.import_module(parent)
        importlib.import_module(name)
        value = getattr(owner, attr, None)
        assert value is None or value is sys.modules[name], (
            f"{parent}.{attr} is {value!r}, hiding the module {name}"
        )
