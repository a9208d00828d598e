"""The domain (``src/shared/lakehook/domain``) knows values, not how the store lays them out: no item keys
(``PK``/``SK``, an index's keys), no key prefix of the single table (``ASSET#``, ``RULE#``, … as
``adapters/dynamodb`` writes them), no ``Decimal`` and no item-shaped method (``to_item``, ``from_item``,
``*_item``). The mapping between domain values and items lives in ``adapters/dynamodb`` (``keys.py``, the
``*_items.py`` codecs and the stores)."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "shared" / "lakehook"
DOMAIN = sorted((PACKAGE / "domain").glob("*.py"))
ITEM_KEYS = {"PK", "SK", "GSI1PK", "GSI1SK", "GSI1"}
ITEM_NAME = re.compile(r"_items?$")  # to_item, from_item, cursor_from_item, latest_partitions_item, …
PREFIX = re.compile(r"^[A-Z][A-Z_]+#")


@functools.cache
def _store_prefixes() -> frozenset[str]:
    """Every key prefix the DynamoDB adapters write (``"ASSET#"``, ``"RULE#"``, …), read from their source once per
    process (parsing every adapter again for each of the domain's modules was 7 of the unit tier's fast 78 s of CPU)."""
    found: set[str] = set()
    for module in (PACKAGE / "adapters" / "dynamodb").glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and PREFIX.match(node.value):
                found.add(PREFIX.match(node.value).group(0))  # type: ignore[union-attr]
    return frozenset(found)


def _strings(node: ast.AST) -> list[str]:
    """String constants, docstrings left out (they may explain what the store does with a value)."""
    docstrings = {
        id(n.body[0].value)
        for n in ast.walk(node)
        if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return [
        n.value
        for n in ast.walk(node)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
    ]


def test_the_store_prefixes_were_found() -> None:
    assert {"ASSET#", "RULE#", "TRIGGER#", "CURSOR#", "PFACT#"} <= _store_prefixes()


def _problems(name: str, source: str) -> list[str]:
    tree = ast.parse(source)
    found: list[str] = []
    prefixes = _store_prefixes()
    for text in _strings(tree):
        if text in ITEM_KEYS:
            found.append(f"{name} names the item key {text!r}")
        if any(text.startswith(p) for p in prefixes):
            found.append(f"{name} builds a store key: {text!r}")
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and ITEM_NAME.search(node.name):
            found.append(f"{name}: {node.name} maps items (adapters/dynamodb does)")
        if isinstance(node, ast.Name | ast.alias):
            used = node.id if isinstance(node, ast.Name) else node.name
            if used in ITEM_KEYS | {"Decimal", "decimal"}:
                found.append(f"{name} uses {used}")
        if isinstance(node, ast.Attribute) and ITEM_NAME.search(node.attr):
            found.append(f"{name} calls .{node.attr} (an item mapping)")
    return found


@pytest.mark.parametrize("module", DOMAIN, ids=lambda p: p.name)
def test_the_domain_module_names_no_item_key_prefix_or_item_method(module: Path) -> None:
    assert _problems(module.name, module.read_text()) == []


def test_the_guard_refuses_what_the_domain_once_held() -> None:
    source = """
from decimal import Decimal
KEY = {"PK": "RULE#" + "r1", "SK": "STATE"}
class AssetState:
    @classmethod
    def from_item(cls, item): return Decimal(item["version"])
def f(partitions): return partitions.to_item()
"""
    problems = "\n".join(_problems("sample.py", source))
    for expected in ("'PK'", "'SK'", "'RULE#'", "from_item maps items", ".to_item", "uses Decimal"):
        assert expected in problems, (expected, problems)
    # the guard's own patterns, on the shapes it exists to refuse
    assert ITEM_NAME.search("to_item") and ITEM_NAME.search("from_item") and ITEM_NAME.search("latest_partitions_item")
    assert ITEM_NAME.search("cursor_from_items") and not ITEM_NAME.search("items")
    assert not ITEM_NAME.search("to_api") and not ITEM_NAME.search("itemize")
