"""No function or method of the domain or the use cases above radon's cyclomatic grade C (complexity 20): a
decision that has grown past it is split into named steps before it grows further (issue 26)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

LIMIT = 20  # grade C ends here; D starts at 21
ROOT = Path(__file__).resolve().parents[2] / "src" / "shared" / "lakehook"
PACKAGES = ("domain", "usecases")


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


def _measured() -> dict[str, int]:
    found: dict[str, int] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found.update(over_limit(path.read_text(encoding="utf-8"), module))
    return found


def test_no_function_of_the_domain_or_use_cases_is_above_grade_c() -> None:
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
