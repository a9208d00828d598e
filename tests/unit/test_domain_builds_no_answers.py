"""The domain (``src/shared/lakehook/domain``) builds no answer: no model of it has a ``to_api`` method (answers are
typed models in ``lakehook.answers`` and ``lakehook.api``, built from domain objects outside the domain; a model
whose stored or sent form is just its fields is taken with ``domain.json_form.json_form``), and no domain module
imports the answers or the API, which sit above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

DOMAIN = Path(__file__).resolve().parents[2] / "src" / "shared" / "lakehook" / "domain"
ABOVE = ("lakehook.answers", "lakehook.api")


def _problems(name: str, source: str) -> list[str]:
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "to_api":
            found.append(f"{name}:{node.lineno} defines to_api (build the answer in lakehook.answers)")
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        for module in modules:
            if any(module == above or module.startswith(f"{above}.") for above in ABOVE):
                found.append(f"{name}:{node.lineno} imports {module}")
    return found


@pytest.mark.parametrize("module", sorted(DOMAIN.glob("*.py")), ids=lambda p: p.name)
def test_no_domain_module_defines_to_api_or_imports_the_answers(module: Path) -> None:
    assert _problems(module.name, module.read_text()) == []


def test_the_guard_finds_what_it_refuses() -> None:
    source = """
from lakehook.answers.explain import GroupExplanation
import lakehook.api.answers
from lakehook.answerset import fine
class Verdict:
    def to_api(self): return {}
    def describe(self): return ""
"""
    assert _problems("sample.py", source) == [
        "sample.py:2 imports lakehook.answers.explain",
        "sample.py:3 imports lakehook.api.answers",
        "sample.py:6 defines to_api (build the answer in lakehook.answers)",
    ]
