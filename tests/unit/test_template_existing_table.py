"""template.yaml's ExistingTableStreamArn (docs/restore.md): the stack on its own table, or on an existing one.

Every reference to the table goes through the UseExistingTable condition, so a stack pointed at a restored table
reads and writes that table only, and its stream functions read that table's stream. A new reference written as
plain ``!Ref LakehookTable`` (a new function's policy, say) fails here rather than reaching the old table.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lakehook.local.template import Template
from tests.support import TEMPLATE

RESTORED = "lakehook-prod-restored-20261207"
STREAM = f"arn:aws:dynamodb:eu-west-1:123456789012:table/{RESTORED}/stream/2026-12-07T10:30:00.123"


def references(node: Any, guarded: bool = False) -> Iterator[tuple[Any, bool]]:
    """Every Ref / GetAtt of LakehookTable, and whether it is the else branch of an If on UseExistingTable."""
    if isinstance(node, dict):
        if node.get("Ref") == "LakehookTable" or (
            isinstance(node.get("Fn::GetAtt"), list) and node["Fn::GetAtt"][0] == "LakehookTable"
        ):
            yield node, guarded
            return
        if isinstance(node.get("Fn::If"), list) and node["Fn::If"][0] == "UseExistingTable":
            _, existing, own = node["Fn::If"]
            yield from references(existing, guarded)
            yield from references(own, True)
            return
        for value in node.values():
            yield from references(value, guarded)
    elif isinstance(node, list):
        for value in node:
            yield from references(value, guarded)


def test_every_reference_to_the_table_goes_through_use_existing_table() -> None:
    found = list(references(TEMPLATE.document))
    assert len(found) >= 13  # the functions' environment and policies, the two stream mappings, the output
    assert [ref for ref, guarded in found if not guarded] == []
    assert TEMPLATE.resources["LakehookTable"]["Condition"] == "CreateTable"


def test_the_functions_use_the_table_the_parameter_names_and_their_own_table_without_it() -> None:
    own = Template(TEMPLATE.path, TEMPLATE.document, names={"LakehookTable": "the-stacks-table"})
    existing = Template(
        TEMPLATE.path, TEMPLATE.document, parameters={"ExistingTableStreamArn": STREAM}, names=own.names
    )
    assert not own.condition("UseExistingTable") and own.condition("CreateTable")
    assert existing.condition("UseExistingTable") and not existing.condition("CreateTable")
    for template, table in ((own, "the-stacks-table"), (existing, RESTORED)):
        specs = template.functions()
        assert {s.environment["LAKEHOOK_TABLE_NAME"] for s in specs} == {table}
    streams = [
        existing.resolve(event["Properties"]["Stream"])
        for resource in TEMPLATE.resources.values()
        for event in resource.get("Properties", {}).get("Events", {}).values()
        if event.get("Type") == "DynamoDB"
    ]
    assert streams == [STREAM, STREAM]
