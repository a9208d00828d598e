"""docs/targets.md matches the code: every target type with every field, the payload's fields, the headers."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lakehook.adapters.targets.webhook import IDEMPOTENCY_HEADER, TRIGGER_KEY_HEADER
from lakehook.domain.completion import COMPLETION_TOKEN_HEADER
from lakehook.domain.dispatch import Invocation, ManifestInput
from lakehook.domain.signing import SIGNATURE_HEADER
from lakehook.domain.targets import TARGET_CONFIGS
from lakehook.receiver import parse_invocation

PAGE = (Path(__file__).resolve().parents[2] / "docs" / "targets.md").read_text(encoding="utf-8")


def section(type_name: str) -> str:
    start = PAGE.index(f"## `{type_name}`")
    following = PAGE.find("\n## ", start + 1)
    return PAGE[start : following if following != -1 else None]


def explained_fields() -> set[str]:
    """The payload fields the page's tables explain (a row's first cell of back-quoted names)."""
    return {
        name for cell in re.findall(r"^\| ((?:`\w+`(?:, )?)+) \|", PAGE, re.M) for name in re.findall(r"`(\w+)`", cell)
    }


def test_every_target_type_documents_every_field() -> None:
    for type_name, model in TARGET_CONFIGS.items():
        fields = set(re.findall(r"^\| `(\w+)` \|", section(type_name), re.M))
        declared = {field.alias or name for name, field in model.model_fields.items()}
        assert fields == declared, f"{type_name}: documented {sorted(fields)}, declared {sorted(declared)}"


def _invocation(**extra: Any) -> Invocation:
    """The invocation of a run of one input, with ``extra`` fields."""
    return Invocation(
        trigger_key="r.g.1",
        rule_id="r",
        group_id="g",
        inputs=(ManifestInput(asset_key="custom://a/b", snapshot_id=1),),
        manifest_uri="s3://m/manifests/r.g.1.json",
        attempt=1,
        **extra,
    )


def test_the_documented_payload_is_what_targets_receive() -> None:
    documented = json.loads(re.search(r"```json\n(.*?)```", PAGE, re.S).group(1))  # type: ignore[union-attr]
    sent = _invocation(completion_token="0" * 64)
    assert list(documented) == list(sent.payload())
    assert parse_invocation(documented).completion_path == documented["completionPath"]
    explained = explained_fields()
    assert set(documented) <= explained, set(documented) - explained
    # a partitioned group's run sends one field more: the table explains it too, and the receiver reads it
    partitioned = sent.model_copy(update={"partition": "dt=2026-12-01/region=eu"}).payload()
    assert set(partitioned) <= explained, set(partitioned) - explained
    received = parse_invocation(partitioned)
    assert received.partition_values == {"dt": "2026-12-01", "region": "eu"}
    assert "partition_values" in section_of("What the run receives")


def section_of(title: str) -> str:
    start = PAGE.index(f"## {title}")
    following = PAGE.find("\n## ", start + 1)
    return PAGE[start : following if following != -1 else None]


def test_the_headers_are_the_dispatchers() -> None:
    for header in (IDEMPOTENCY_HEADER, TRIGGER_KEY_HEADER, SIGNATURE_HEADER, COMPLETION_TOKEN_HEADER):
        assert f"`{header}" in PAGE, header


def test_a_replays_choices_are_explained_per_target_and_read_by_the_receiver() -> None:
    sent = _invocation(
        start_from="4242",
        variables={"full_refresh": True},
    ).payload()
    explained = explained_fields()
    assert {"startFrom", "variables"} <= explained
    received = parse_invocation(sent)
    assert (received.start_from, received.variables) == ("4242", {"full_refresh": True})
    choices = section_of("Replay choices")
    documented = json.loads(re.search(r"```json\n(.*?)```", choices, re.S).group(1))  # type: ignore[union-attr]
    assert set(documented) == {"startFrom", "variables"}
    for type_name in TARGET_CONFIGS:
        assert re.search(rf"^\| [^|]*`{type_name}`", choices, re.M), f"{type_name}: no row in Replay choices"
    assert "start_from" in choices and "invocation.variables" in choices
