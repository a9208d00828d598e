"""The unit tier needs only ``.venv``: no unit test reads the template through the SAM venv (``tests/sam_template``)
or starts the SAM CLI; those live in tests/integration."""

from __future__ import annotations

import re

from tests.support import ROOT

NEEDS_SAM = re.compile(r"tests\.sam_template|\.venv-sam|sam_translate")


def test_no_unit_test_needs_the_sam_venv() -> None:
    needing = [
        path.relative_to(ROOT).as_posix()
        for path in sorted((ROOT / "tests" / "unit").rglob("*.py"))
        if path.name != "test_unit_tier.py" and NEEDS_SAM.search(path.read_text(encoding="utf-8"))
    ]
    assert needing == [], f"unit tests needing the SAM venv (move them to tests/integration): {needing}"
