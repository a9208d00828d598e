"""docs/architecture.md is a maintainer's map, and must stay accurate against the code.

- "One event, end to end": every module and symbol a row names exists; within a row each ``A → B`` is a real
  step (A imports B's module, names B's symbol, or uses a port B implements); and each row follows on from the
  row before it in the same way, unless it starts on its own trigger (a function's handler, an API route, or
  a step the stream starts), so the walk is in call order.
- "A maintainer's map" and the "How to add …" sections: every path named exists, and every symbol a step names
  is defined in one of the modules that step names.

Paths are under ``src/shared/lakehook/`` unless they start with ``functions/``, ``tests/`` or ``docs/``.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "shared" / "lakehook"
TEXT = (ROOT / "docs" / "architecture.md").read_text()
OUTSIDE_PACKAGE = ("functions/", "tests/", "docs/")
ROOT_FILES = ("template.yaml",)


def _section(heading: str) -> str:
    start = TEXT.index(heading)
    end = TEXT.find("\n## ", start + 1)
    return TEXT[start : end if end != -1 else None]


def _path(name: str) -> Path:
    return ROOT / name if name.startswith(OUTSIDE_PACKAGE) or name in ROOT_FILES else PACKAGE / name


def _exists(name: str) -> bool:
    if "<" in name:  # adapters/targets/<type>.py: one module per target type
        folder = _path(name.split("<")[0])
        return folder.is_dir() and any(folder.glob("*.py"))
    return _path(name).exists()


# --- what a module defines, imports and names (AST) ------------------------------------------------


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


def _module_name(path: Path) -> str:
    relative = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = relative.parts[:-1] if relative.name == "__init__" else relative.parts
    return ".".join(parts)


@cache
def _defined(path: Path) -> frozenset[str]:
    """Classes, functions and methods (at any depth), and names assigned at module or class level."""
    names: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
            body = node.body if isinstance(node, ast.ClassDef) else []
            for statement in body:
                if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
                    names.add(statement.target.id)
                if isinstance(statement, ast.Assign):
                    names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    for statement in _tree(path).body:
        if isinstance(statement, ast.Assign):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
    return frozenset(names)


@cache
def _imports(path: Path) -> frozenset[str]:
    """Every module imported, anywhere in the file (lazy imports inside functions too), and ``module.name``."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return frozenset(found)


@cache
def _names(path: Path) -> frozenset[str]:
    """Every name and attribute the module uses."""
    found: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.add(node.asname or node.name.rsplit(".", 1)[-1])
    return frozenset(found)


@cache
def _bases(path: Path) -> frozenset[str]:
    """The base classes the module's classes extend (the ports an adapter implements)."""
    return frozenset(
        base.id if isinstance(base, ast.Name) else base.attr
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.ClassDef)
        for base in node.bases
        if isinstance(base, ast.Name | ast.Attribute)
    )


# --- the walk ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Named:
    path: str
    symbol: str | None

    @property
    def file(self) -> Path:
        return _path(self.path)

    @property
    def checkable(self) -> bool:
        return "<" not in self.path and self.path.endswith(".py")


Chain = tuple[tuple[Named, ...], ...]  # the segments between the arrows, each a few modules


@dataclass(frozen=True)
class Step:
    number: int
    text: str
    chains: tuple[Chain, ...]  # ``A → B; C → D``: C is called from the chain before it, as B is from A

    @property
    def chain(self) -> Chain:
        return self.chains[0]

    @property
    def modules(self) -> list[Named]:
        return [n for chain in self.chains for segment in chain for n in segment]

    @property
    def starts_on_its_own(self) -> bool:
        """A function's handler (invoked by AWS), an API route (the resolver includes and calls it), the client
        (the writer runs it), or a step the DynamoDB stream starts."""
        first = self.chain[0][0].path
        return first.startswith(("functions/", "api/routes/", "client/")) or "stream" in self.text


# `path.py` and, optionally, its symbol: (`Name`), (`Name.method`), (`call(args)`), (`Plan` → `Result`: the first)
CELL = re.compile(r"`([\w/<>.-]+\.py)`(?: \(`([^`]+)`[^)]*\))?")


def _split_outside_parentheses(text: str, separator: str) -> list[str]:
    """``text`` split on ``separator`` where it is not inside (…): ``A (`X` → `Y`) → B`` is two parts."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


def _symbol(text: str | None) -> str | None:
    """``evaluate(rule, claim=False)`` → ``evaluate``; ``LakehookResolver.resolve`` → ``resolve``."""
    if text is None:
        return None
    return text.split("(")[0].rsplit(".", 1)[-1]


def walk() -> list[Step]:
    steps = []
    for line in _section("## One event, end to end").splitlines():
        match = re.match(r"^\| (\d+) \| (.+) \| (.+) \|$", line)
        if not match:
            continue
        number, text, where = int(match.group(1)), match.group(2), match.group(3)
        chains = tuple(
            tuple(
                tuple(Named(path, _symbol(symbol)) for path, symbol in CELL.findall(segment))
                for segment in _split_outside_parentheses(part, "→")
            )
            for part in _split_outside_parentheses(where, ";")
        )
        for chain in chains:
            assert all(chain), f"step {number}: a segment of {where!r} names no module"
        steps.append(Step(number, text, chains))
    return steps


def reaches(caller: Named, callee: Named) -> bool:
    """``caller → callee`` holds in the code: the caller imports the callee's module, names its symbol, or uses
    a class the callee's module extends (the port it implements)."""
    if not (caller.checkable and callee.checkable):
        return True  # a module per type (adapters/targets/<type>.py): existence was checked
    if caller.file == callee.file:
        return True  # the step goes on in the same module
    if callee.file.is_relative_to(PACKAGE):
        target = _module_name(callee.file)
        if any(i == target or i.startswith(f"{target}.") for i in _imports(caller.file)):
            return True
    if callee.symbol is not None and callee.symbol in _names(caller.file):
        return True
    ports = _bases(callee.file)
    if ports & _names(caller.file):
        return True  # the caller names the port the callee implements
    # or calls a method of that port (not one a dict, list, set or str has too: ``.get`` proves nothing)
    return bool((_port_methods(ports) - BUILTIN_METHODS) & _calls(caller.file))


BUILTIN_METHODS = frozenset(dir(dict) + dir(list) + dir(set) + dir(str))


@cache
def _port_methods(ports: frozenset[str]) -> frozenset[str]:
    """The methods the ports named declare (``ports/*.py``): what a caller reaches an adapter through."""
    found: set[str] = set()
    for module in (PACKAGE / "ports").glob("*.py"):
        for node in _tree(module).body:
            if isinstance(node, ast.ClassDef) and node.name in ports:
                found.update(f.name for f in node.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_"))
    return frozenset(found)


@cache
def _calls(path: Path) -> frozenset[str]:
    """The methods the module calls (``x.name(…)``)."""
    return frozenset(
        node.func.attr
        for node in ast.walk(_tree(path))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    )


def _reached(callers: tuple[Named, ...] | list[Named], callees: tuple[Named, ...] | list[Named]) -> bool:
    return any(reaches(a, b) for a in callers for b in callees)


def test_the_walk_is_read() -> None:
    steps = walk()
    assert [s.number for s in steps] == list(range(1, len(steps) + 1)), "the steps are numbered 1, 2, 3 …"
    assert len(steps) >= 12 and sum(len(s.modules) for s in steps) >= 25


@pytest.mark.parametrize("step", walk(), ids=lambda s: f"step{s.number}")
def test_every_module_and_symbol_the_walk_names_exists(step: Step) -> None:
    for named in step.modules:
        assert _exists(named.path), f"step {step.number}: {named.path} does not exist"
        if named.symbol and named.checkable:
            assert named.symbol in _defined(named.file), f"step {step.number}: {named.symbol} is not in {named.path}"


@pytest.mark.parametrize("step", walk(), ids=lambda s: f"step{s.number}")
def test_each_arrow_of_a_step_is_a_call_into_the_next_module(step: Step) -> None:
    for index, chain in enumerate(step.chains):
        if index > 0:  # a later chain of the step starts from a module of the chains before it
            earlier = [n for c in step.chains[:index] for segment in c for n in segment]
            assert _reached(earlier, chain[0]), f"step {step.number}: nothing before {chain[0][0].path} calls it"
        for before, after in itertools.pairwise(chain):
            assert _reached(before, after), (
                f"step {step.number}: nothing of {[n.path for n in before]} imports, calls or implements a port of "
                f"{[n.path for n in after]}"
            )


def test_each_step_follows_from_the_one_before_or_starts_on_its_own() -> None:
    steps = walk()
    on_their_own = [s.number for s in steps if s.starts_on_its_own]
    assert 1 in on_their_own and len(on_their_own) < len(steps)  # some steps are checked against the one before
    for before, step in itertools.pairwise(steps):
        if step.starts_on_its_own:
            continue
        assert _reached(before.modules, step.chain[0]), (
            f"step {step.number} ({step.chain[0][0].path}) is not called from step {before.number}: reorder the walk, "
            f"or name the module of step {before.number} that calls it"
        )


def test_a_cell_splits_on_arrows_and_semicolons_outside_parentheses() -> None:
    where = "`a.py` (`Plan` → `Result`) → `b.py`, `c.py`; `d.py` (`f(x; y)`)"
    parts = _split_outside_parentheses(where, ";")
    assert len(parts) == 2 and len(_split_outside_parentheses(parts[0], "→")) == 2
    assert CELL.findall(parts[0]) == [("a.py", "Plan"), ("b.py", ""), ("c.py", "")]
    assert _symbol("f(x; y)") == "f" and _symbol("LakehookResolver.resolve") == "resolve"


def test_the_order_check_refuses_a_walk_out_of_order() -> None:
    # the checks themselves, on steps the code does not take
    resolve = Named("handlers.py", "handle_stream_batch")
    ingest = Named("usecases/ingest.py", "IngestEvents")
    assert not reaches(ingest, resolve)
    assert reaches(Named("functions/resolver/app.py", None), resolve)
    assert reaches(Named("adapters/dynamodb/asset_store.py", None), Named("adapters/dynamodb/expressions.py", None))
    # a use case reaches an adapter through its port; a module that only calls dict.get does not
    assert reaches(Named("usecases/ingest.py", None), Named("adapters/dynamodb/asset_store.py", None))
    assert not reaches(Named("domain/triggers.py", None), Named("adapters/dynamodb/trigger_store.py", None))


# --- the map and the how-tos -------------------------------------------------------------------------

BACKTICKED = re.compile(r"`([^`]+)`")
PATHLIKE = re.compile(r"^[\w<>.-]+(/[\w<>.-]*)*$")


def _is_path(text: str) -> bool:
    return PATHLIKE.match(text) is not None and ("/" in text or text.endswith((".py", ".yaml", ".md")))


def _modules_of(path: str) -> list[Path]:
    """The module a path names; every module of the folder for one per type (``adapters/targets/<type>.py``)."""
    if "<" in path:
        return sorted(_path(path.split("<")[0]).glob("*.py"))
    return [_path(path)]


def _howto_steps() -> list[tuple[str, str]]:
    """(section, text) of every numbered step of every "How to add" section."""
    found = []
    for match in re.finditer(r"^### (How to add [^\n]+)\n(.*?)(?=^##)", TEXT, re.M | re.S):
        for step in re.split(r"^\d+\. ", match.group(2), flags=re.M)[1:]:
            found.append((match.group(1), step))
    return found


def test_the_howtos_are_there() -> None:
    sections = {title for title, _ in _howto_steps()}
    assert {"How to add a target type", "How to add a table format", "How to add a condition"} <= sections
    assert len(_howto_steps()) >= 12


def test_every_path_of_the_map_exists() -> None:
    table = [line for line in _section("## A maintainer's map").split("### How to add")[0].splitlines() if "|" in line]
    named = [t for t in BACKTICKED.findall("\n".join(table)) if _is_path(t)]
    assert len(named) >= 20
    for path in named:
        assert _exists(path), f"the map names {path}, which does not exist"


@pytest.mark.parametrize(("title", "text"), _howto_steps(), ids=lambda v: v[:40] if isinstance(v, str) else v)
def test_every_path_and_symbol_a_howto_step_names_exists(title: str, text: str) -> None:
    quoted = BACKTICKED.findall(text)
    paths = [t for t in quoted if _is_path(t)]
    for path in paths:
        assert _exists(path), f"{title}: {path} does not exist"
    modules = [m for p in paths if p.endswith(".py") for m in _modules_of(p) if m.is_relative_to(PACKAGE)]
    for item in quoted:
        symbol = item.split("(")[0]
        if _is_path(item) or not re.fullmatch(r"[A-Za-z_]\w*", symbol):
            continue  # a path, or an example such as `type: Literal["<type>"]`
        where = modules or sorted(PACKAGE.rglob("*.py"))
        assert any(symbol in _defined(m) for m in where), (
            f"{title}: {symbol} is defined in none of {[str(m.relative_to(PACKAGE)) for m in where]}"
        )
