"""``lakehook apply``'s reading of its config file (``load``): each kind a list of objects or a mapping of id to
object, every entry with its id, none twice, no unknown section. Pinned across the split of ``load`` into named
steps (issue 37, the complexity gate at 15): these pass before and after."""

from __future__ import annotations

from pathlib import Path

import pytest

from lakehook.cli_commands.api import CliError
from lakehook.cli_commands.apply import load


def _load(tmp_path: Path, text: str) -> dict[str, list[dict[str, object]]]:
    path = tmp_path / "lakehook.yaml"
    path.write_text(text, encoding="utf-8")
    return load(str(path))


def test_a_kind_is_a_list_or_a_mapping_of_id_to_object_and_an_absent_kind_is_empty(tmp_path: Path) -> None:
    objects = _load(
        tmp_path,
        "producers:\n  - producerId: etl\naliases:\n  daily:\n    assetKeys: [iceberg://db.a]\n  empty:\nrules: []\n",
    )
    assert objects == {
        "producers": [{"producerId": "etl"}],
        "assets": [],
        "aliases": [{"name": "daily", "assetKeys": ["iceberg://db.a"]}, {"name": "empty"}],
        "rules": [],
    }


def test_an_empty_file_declares_nothing(tmp_path: Path) -> None:
    assert _load(tmp_path, "") == {"producers": [], "assets": [], "aliases": [], "rules": []}


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("- producers\n", "expected a mapping with producers, assets, aliases and rules"),
        ("producers: []\nwidgets: []\n", "unknown section(s) widgets; expected producers, assets, aliases, rules"),
        ("rules: 3\n", "rules must be a list of objects or a mapping of id to object"),
        ("rules:\n  - 3\n", "rules must be a list of objects or a mapping of id to object"),
        ("assets:\n  - format: iceberg\n", "every entry of assets needs a assetKey"),
        ("rules:\n  - ruleId: 7\n", "every entry of rules needs a ruleId"),
        ("rules:\n  - ruleId: a\n  - ruleId: b\n  - ruleId: a\n", "rules declares a twice"),
        ("producers:\n  - producerId: p\nrules:\n  - {}\n", "every entry of rules needs a ruleId"),
    ],
)
def test_a_malformed_file_is_refused_naming_what_is_wrong(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(CliError) as refused:
        _load(tmp_path, text)
    assert says in str(refused.value)


def test_the_first_malformed_kind_in_kind_order_is_named(tmp_path: Path) -> None:
    with pytest.raises(CliError, match="producers declares p twice"):
        _load(tmp_path, "rules: 3\nproducers:\n  - producerId: p\n  - producerId: p\n")
