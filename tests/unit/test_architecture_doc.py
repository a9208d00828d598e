"""docs/architecture.md's "one event, end to end" names modules and symbols: each must exist, so the walk a
newcomer follows never points at code that moved."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "shared" / "lakehook"


def _section() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("## One event, end to end")
    return text[start : text.index("\n## ", start + 1)]


def _path(name: str) -> Path:
    return ROOT / name if name.startswith("functions/") else PACKAGE / name


def test_every_module_and_symbol_the_walk_names_exists() -> None:
    named = 0
    for cell in re.findall(r"`([\w/<>.-]+\.py)`(?: \(`(\w+)`\))?", _section()):
        path, symbol = cell
        if "<" in path:  # adapters/targets/<type>.py: one per target type
            assert list(_path(path.split("<")[0]).glob("*.py")), path
            continue
        assert _path(path).is_file(), f"{path} does not exist"
        if symbol:
            assert re.search(rf"\b(def|class) {symbol}\b|^{symbol}\b", _path(path).read_text(), re.M), (
                f"{symbol} is not defined in {path}"
            )
        named += 1
    assert named >= 25  # the table is there and was read
