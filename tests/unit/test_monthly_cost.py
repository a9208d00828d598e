"""docs/deploy.md's worked month and its concurrency figures are what bench/monthly_cost.py computes."""

from __future__ import annotations

import re

from bench.monthly_cost import Estate, lines, markdown, reserved_concurrency

from tests.support import ROOT

DEPLOY = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")


def test_the_worked_month_on_the_page_is_the_one_computed() -> None:
    assert markdown(Estate()) in DEPLOY


def test_the_reserved_concurrency_the_page_states_is_the_templates() -> None:
    reserved, functions = reserved_concurrency()
    assert sum(functions.values()) == 10  # every function but none: each family reserves for its functions
    assert f"The defaults reserve {reserved} in all" in DEPLOY
    assert f"must be at least {reserved + 100}" in DEPLOY
    assert f"needs a quota of at least {reserved + 100}" in DEPLOY
    shown = re.search(r"in all\s+\(([^)]*)\)", DEPLOY)
    assert (
        shown is not None
        and sum(int(a) * int(b) for a, b in re.findall(r"(\d+) \N{MULTIPLICATION SIGN} (\d+)", shown.group(1)))
        == reserved
    )


def test_the_month_grows_with_the_estate() -> None:
    """Each count of the estate moves its own lines only: twice the tables, twice the polling."""
    base = {item: cost for item, _, cost in lines(Estate())}
    bigger = {item: cost for item, _, cost in lines(Estate(tables=1000))}
    for item in ("polls: Glue GetTable", "polls: DynamoDB (2 strong reads)", "poll workers", "poll queue"):
        assert abs(bigger[item] - 2 * base[item]) < 1e-9
    assert bigger["events"] == base["events"] and bigger["secrets (fixed)"] == base["secrets (fixed)"]
