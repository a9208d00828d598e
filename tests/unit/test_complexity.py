"""No function or method of the Lambda core above radon's cyclomatic grade C (complexity 20): a decision that has
grown past it is split into named steps before it grows further. The domain and the use cases first (issue 26),
now everything under ``src/shared/lakehook`` (adapters, local runtime, API, console, client, CLI) and the
functions' handlers (issue 37)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

LIMIT = 20  # grade C ends here; D starts at 21
REPOSITORY = Path(__file__).resolve().parents[2]
# the trees walked, each module named from its tree's parent (``lakehook.adapters.…``, ``functions.resolver.app``)
ROOTS = (REPOSITORY / "src" / "shared" / "lakehook", REPOSITORY / "functions")


def _functions(blocks: list[Function | Class]) -> Iterator[Function]:
    """Every function and method, closures and nested classes' methods included."""
    for block in blocks:
        if isinstance(block, Class):
            yield from _functions([*block.methods, *block.inner_classes])
        else:
            yield block
            yield from _functions([*block.closures, *getattr(block, "inner_classes", [])])


def over_limit(source: str, module: str) -> dict[str, int]:
    """The functions of ``source`` (named ``<module>.<qualified name>``) above the limit, with their complexity."""
    return {f"{module}.{f.fullname}": f.complexity for f in _functions(cc_visit(source)) if f.complexity > LIMIT}


def _modules() -> Iterator[tuple[str, Path]]:
    """Every Python module of the walked trees, with its dotted name."""
    for root in ROOTS:
        for path in sorted(root.rglob("*.py")):
            yield ".".join(path.relative_to(root.parent).with_suffix("").parts), path


def _measured() -> dict[str, int]:
    found: dict[str, int] = {}
    for module, path in _modules():
        found.update(over_limit(path.read_text(encoding="utf-8"), module))
    return found


def test_the_walk_covers_the_whole_lambda_core() -> None:
    modules = {module for module, _ in _modules()}
    for package in ("domain", "usecases", "adapters", "ports", "api", "local", "console", "client", "cli_commands"):
        assert any(m.startswith(f"lakehook.{package}.") for m in modules), f"lakehook.{package} is not walked"
    assert "lakehook.container" in modules
    assert "functions.resolver.app" in modules
    assert "lakehook.adapters.lakehouse.delta" in modules


def test_no_function_of_the_lambda_core_is_above_grade_c() -> None:
    over = dict(_measured())
    listed = "\n".join(f"  {name}: {c}" for name, c in sorted(over.items(), key=lambda item: -item[1]))
    assert not over, f"above radon grade C (complexity > {LIMIT}); split them into named steps:\n{listed}"


def test_the_walk_sees_methods_closures_and_a_function_over_the_limit() -> None:
    branches = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(LIMIT))
    source = (
        f"def flat(x):\n{branches}    return -1\n"
        f"class Holder:\n    def method(self, x):\n{branches.replace('    ', '        ')}        return -1\n"
        f"def outer():\n    def inner(x):\n{branches.replace('    ', '        ')}        return -1\n    return inner\n"
        f"def small(x):\n    return x\n"
    )
    assert over_limit(source, "m") == {"m.flat": LIMIT + 1, "m.Holder.method": LIMIT + 1, "m.inner": LIMIT + 1}
