"""The SharedLayer ships exactly the lakehook modules the functions run (docs/packaging.md, "What the layer ships").

Which modules a function can load is found from the source: every ``import`` in each handler (``functions/*/app.py``,
by the template's CodeUri) and, transitively, in every lakehook module those reach, wherever the statement is (a
builder's import inside a function counts: it runs on first use), skipping only ``if TYPE_CHECKING:`` blocks. The
API's route modules, which ``lakehook.api.app`` imports by name on a route's first request, are roots too, and no
other shipped module may import by name (the walk could not see it). ``src/shared/tool-only.txt`` lists the rest
(the local runtime, demo, CLI, console, ...): the layer build leaves those out, and the two must partition the
package: nothing a function reaches is listed, and everything not listed is reached by some function.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from tests.support import ROOT, TEMPLATE

SHARED = ROOT / "src" / "shared"
TOOL_ONLY_LIST = SHARED / "tool-only.txt"
HANDLERS = {
    logical_id: ROOT / resource["Properties"]["CodeUri"] / "app.py"
    for logical_id, resource in TEMPLATE.resources.items()
    if resource.get("Type") == "AWS::Serverless::Function"
}
# Never in a function's import graph, whatever the list says (the issue names them).
NEVER_IN_LAMBDA = [
    "lakehook.local",
    "lakehook.demo",
    "lakehook.cli",
    "lakehook.cli_commands",
    "lakehook.console",
]


def tool_only() -> list[str]:
    """tool-only.txt's entries, as module names (``cli.py`` -> ``lakehook.cli``)."""
    lines = [line.strip() for line in TOOL_ONLY_LIST.read_text().splitlines()]
    entries = [line for line in lines if line and not line.startswith("#")]
    return ["lakehook." + entry.removesuffix(".py").replace("/", ".") for entry in entries]


def module_file(name: str) -> Path | None:
    path = SHARED.joinpath(*name.split("."))
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    return None


def source(name: str) -> Path:
    path = module_file(name)
    assert path is not None, name
    return path


def package_modules() -> set[str]:
    """Every module of the lakehook package, by name."""
    names = set()
    for path in (SHARED / "lakehook").rglob("*.py"):
        parts = path.relative_to(SHARED).with_suffix("").parts
        names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _statements(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


@cache  # the files do not change during a run; every handler's walk reads the same modules
def imports_of(path: Path, name: str) -> set[str]:
    """The lakehook modules importing ``path`` (module ``name``) loads: each named module, its parent packages,
    and the submodules a ``from package import x`` names."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    named: set[str] = set()
    for node in _statements(parsed(path)):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
            continue
        if node.level:
            base = package.split(".")[: len(package.split(".")) - node.level + 1]
            module = ".".join([*base, *([node.module] if node.module else [])])
        else:
            module = node.module or ""
        named.add(module)
        named.update(f"{module}.{alias.name}" for alias in node.names)
    reached = set()
    for module in named:
        parts = module.split(".")
        if parts[0] != "lakehook":
            continue
        reached.update(p for p in (".".join(parts[: i + 1]) for i in range(len(parts))) if module_file(p))
    return reached


def route_modules() -> set[str]:
    from lakehook.api.app import _ROUTES_PACKAGE, ROUTE_MODULES

    return {f"{_ROUTES_PACKAGE}.{module}" for module in ROUTE_MODULES}


def reached_from(roots: set[str]) -> dict[str, str]:
    """Every lakehook module reachable from ``roots``, each with one module that imports it."""
    seen: dict[str, str] = {}
    todo = [(root, "(root)") for root in sorted(roots)]
    while todo:
        name, importer = todo.pop()
        if name in seen:
            continue
        seen[name] = importer
        path = module_file(name)
        assert path is not None, f"{importer} imports {name}, which is not in src/shared"
        todo += [(found, name) for found in imports_of(path, name)]
    return seen


@cache
def handler_graph(handler: Path) -> dict[str, str]:
    return reached_from(imports_of(handler, "app") | route_modules())


def lambda_modules() -> set[str]:
    return set().union(*(handler_graph(path) for path in HANDLERS.values()))


def within(name: str, packages: list[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


@pytest.mark.parametrize("function", sorted(HANDLERS))
def test_no_function_reaches_a_tool_only_module(function: str) -> None:
    graph = handler_graph(HANDLERS[function])
    assert "lakehook.container" in graph and "lakehook.domain" in graph  # the walk did follow the handler
    strays = {name: graph[name] for name in graph if within(name, [*NEVER_IN_LAMBDA, *tool_only()])}
    assert strays == {}, f"{function} reaches tool-only modules (module: imported by): {strays}"


def test_the_tool_only_list_and_the_functions_partition_the_package() -> None:
    listed = tool_only()
    assert all(module_file(name) for name in listed), "tool-only.txt names a path that does not exist"
    assert all(within(name, listed) for name in NEVER_IN_LAMBDA)
    shipped = {name for name in package_modules() if not within(name, listed)}
    used = lambda_modules()
    assert used <= shipped, f"the functions import modules the layer leaves out: {sorted(used - shipped)}"
    assert shipped - used == set(), (
        f"the layer would ship modules no function imports (list them in tool-only.txt): {sorted(shipped - used)}"
    )


def test_only_the_route_table_imports_by_name() -> None:
    """The walk sees ``import`` statements only: a shipped module importing by name would hide an edge."""
    by_name = sorted(
        name
        for name in lambda_modules()
        if any(
            (isinstance(node, ast.Attribute) and node.attr == "import_module")
            or (isinstance(node, ast.Name) and node.id == "__import__")
            for node in ast.walk(parsed(source(name)))
        )
    )
    assert by_name == ["lakehook.api.app"]


def test_the_walk_follows_lazy_imports_and_skips_type_checking_ones(tmp_path: Path) -> None:
    handler = tmp_path / "app.py"
    handler.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from lakehook.local.runtime import LocalStack\n"
        "def build():\n    from lakehook.usecases import poll\n    import lakehook.adapters.sqs\n"
        "from lakehook.domain import errors\n"
    )
    found = imports_of(handler, "app")
    assert {"lakehook.usecases.poll", "lakehook.adapters.sqs", "lakehook.domain.errors"} <= found
    assert {"lakehook.usecases", "lakehook.adapters", "lakehook.domain"} <= found
    assert "lakehook" not in found  # a namespace package: no file of its own to ship
    assert not any(within(name, ["lakehook.local"]) for name in found)


def built_layer(tmp_path: Path) -> Path:
    done = subprocess.run(
        ["make", "-s", "-C", str(SHARED), "build-SharedLayer", f"ARTIFACTS_DIR={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return tmp_path / "python"


PROBE = """
import importlib, importlib.util, json, pkgutil, sys
import lakehook
assert list(lakehook.__path__) == [sys.argv[1]], lakehook.__path__
for function, path in json.loads(sys.argv[2]).items():
    spec = importlib.util.spec_from_file_location(f"app_{function}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if hasattr(getattr(module, "app", None), "include_every_route"):
        module.app.include_every_route()
for info in pkgutil.walk_packages(lakehook.__path__, "lakehook."):
    importlib.import_module(info.name)
print(json.dumps(sorted(m for m in sys.modules if m == "lakehook" or m.startswith("lakehook."))))
"""


def test_the_layer_build_ships_what_the_functions_import_and_it_loads(tmp_path: Path) -> None:
    site = built_layer(tmp_path)
    files = sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file())
    assert all(f.startswith("lakehook/") and f.endswith(".py") for f in files), files  # no console page, no bytecode
    shipped = {name.removesuffix(".__init__") for name in (f.removesuffix(".py").replace("/", ".") for f in files)}
    assert shipped == lambda_modules()

    # Every handler, every API route and every shipped module imports from the built layer alone.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_", "LAKEHOOK_", "LAMBDA_"))}
    env.update(
        {
            "PYTHONPATH": str(site),
            "PYTHONDONTWRITEBYTECODE": "1",
            "AWS_LAMBDA_FUNCTION_NAME": "layer-test",
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "LAKEHOOK_TABLE_NAME": "layer-test",
        }
    )
    handlers = json.dumps({function: str(path) for function, path in HANDLERS.items()})
    done = subprocess.run(
        [sys.executable, "-S", "-c", PROBE, str(site / "lakehook"), handlers],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": os.pathsep.join([str(site), *_site_packages()])},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert set(json.loads(done.stdout.strip().splitlines()[-1])) == shipped | {"lakehook"}  # and the namespace


def _site_packages() -> list[str]:
    """This interpreter's third-party packages, without the source tree (a ``-S`` child has neither)."""
    return [p for p in sys.path if p.endswith("site-packages")]
