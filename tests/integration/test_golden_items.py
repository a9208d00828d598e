"""The compatibility contract for stored items (docs/upgrade.md#stored-items): this code reads every item every kept
release wrote.

Each release's golden items (``tests/golden/<version>/<kind>.json``, written once by ``tests/golden/generate.py``
through that release's stores, never edited) are put as they are into a fresh table on moto, then read through
this code's DynamoDB stores; every value the release's readers answered must be answered again (a later release
may answer more fields, never other values or fewer).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from lakehook.domain.rules import Rule
from lakehook.version import __version__
from tests.contracts.conftest import Backend, dynamodb_backend
from tests.golden.scenario import READS, from_json, kind_of, plain, write

pytestmark = pytest.mark.integration

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
SEMVER = re.compile(r"\d+\.\d+\.\d+")


def releases() -> list[str]:
    found = [p.name for p in GOLDEN.iterdir() if p.is_dir() and SEMVER.fullmatch(p.name)]
    return sorted(found, key=lambda v: tuple(int(n) for n in v.split(".")))


def kept() -> list[tuple[str, str]]:
    return [(release, path.stem) for release in releases() for path in sorted((GOLDEN / release).glob("*.json"))]


def golden(release: str, kind: str) -> dict[str, Any]:
    content: dict[str, Any] = json.loads((GOLDEN / release / f"{kind}.json").read_text(encoding="utf-8"))
    return content


def answers_at_least(recorded: Any, answered: Any, where: str = "") -> list[str]:
    """Where ``answered`` differs from ``recorded``: a field recorded must be answered with the same value, a list
    with as many values; a field the release did not answer may be new."""
    if isinstance(recorded, dict):
        if not isinstance(answered, dict):
            return [f"{where or '.'}: {answered!r} is not an object"]
        missing = [f"{where}.{k}: no longer answered" for k in recorded if k not in answered]
        return missing + [
            p for k in recorded if k in answered for p in answers_at_least(recorded[k], answered[k], f"{where}.{k}")
        ]
    if isinstance(recorded, list):
        if not isinstance(answered, list) or len(answered) != len(recorded):
            return [f"{where or '.'}: {answered!r} instead of {recorded!r}"]
        return [
            p
            for i, (r, a) in enumerate(zip(recorded, answered, strict=True))
            for p in answers_at_least(r, a, f"{where}[{i}]")
        ]
    return [] if recorded == answered else [f"{where or '.'}: {answered!r} instead of {recorded!r}"]


@pytest.fixture(scope="module")
def tables() -> Iterator[dict[str, Backend]]:
    """Per kept release, this code's stores on a table holding exactly that release's golden items."""
    with mock_aws():
        backends: dict[str, Backend] = {}
        for number, release in enumerate(releases()):
            backend = dynamodb_backend(f"lakehook-golden-{number}")
            table = boto3.resource("dynamodb", region_name="us-east-1").Table(f"lakehook-golden-{number}")
            with table.batch_writer() as batch:
                for path in sorted((GOLDEN / release).glob("*.json")):
                    for item in golden(release, path.stem)["items"]:
                        batch.put_item(Item=from_json(item))
            backends[release] = backend
        yield backends


def test_this_version_has_its_golden_items() -> None:
    assert __version__ in releases(), f"tests/golden/{__version__}/ is missing: run python -m tests.golden.generate"


@pytest.mark.parametrize(("release", "kind"), kept(), ids=[f"{r}-{k}" for r, k in kept()])
def test_this_code_reads_what_each_release_wrote(tables: dict[str, Backend], release: str, kind: str) -> None:
    recorded = golden(release, kind)
    assert recorded["items"] and all(kind_of(from_json(i)) == kind for i in recorded["items"])
    assert kind in READS, f"no reader for {kind}, which {release} wrote: a release reads every kind it ever wrote"

    answered = plain(READS[kind](tables[release]))

    assert answers_at_least(recorded["read"], answered) == []


def test_every_kind_this_code_writes_is_named_and_read(tables: dict[str, Backend]) -> None:
    """The scenario on this code's stores (a table of its own in the module's moto): an item of a kind no reader
    knows fails here, before it ships."""
    write(dynamodb_backend("lakehook-golden-now"))
    items = boto3.resource("dynamodb", region_name="us-east-1").Table("lakehook-golden-now").scan()["Items"]
    assert {kind_of(item) for item in items} == set(READS)


def test_a_rule_with_a_field_this_code_does_not_know_is_unreadable_until_a_put_replaces_it(
    tables: dict[str, Backend],
) -> None:
    """What docs/upgrade.md#rolling-back-n1-to-n warns of: a rule a newer release stored with a field this code does
    not know is refused (a 409 on read, left out of listings, counted unchecked), and a PUT of it repairs it."""
    from lakehook.ports.rules import UnreadableRuleError
    from tests.golden.scenario import RULE

    newer = [from_json(item) for item in golden(__version__, "rule")["items"]]
    body = json.loads(newer[0]["body"])
    newer[0]["body"] = json.dumps({**body, "aFieldOfANewerRelease": True})
    backend = dynamodb_backend("lakehook-golden-newer")
    boto3.resource("dynamodb", region_name="us-east-1").Table("lakehook-golden-newer").put_item(Item=newer[0])

    with pytest.raises(UnreadableRuleError):
        backend.rules.get_rule(RULE)
    listed = backend.rules.list_rules(10)
    assert listed.items == [] and set(listed.unreadable) == {RULE}

    backend.rules.put_rule(Rule.model_validate(body), 1)
    stored = backend.rules.get_rule(RULE)
    assert stored is not None and stored.rule == Rule.model_validate(body)
