"""docs/api.md is generated from the OpenAPI document and must match the routes."""

from __future__ import annotations

from pathlib import Path

from lakehook.cli_commands.api_docs import DOCS_PATH, REGENERATE, load_spec, render, type_of


def test_docs_api_md_matches_the_openapi_document() -> None:
    spec = load_spec()
    expected = render(spec)
    current = DOCS_PATH.read_text(encoding="utf-8") if DOCS_PATH.exists() else ""
    assert current == expected, f"docs/api.md is stale; regenerate it with: {REGENERATE}"
    for path in spec["paths"]:
        assert f"`{path}`" in current


def test_stale_page_is_reported_with_the_regenerate_command(tmp_path: Path) -> None:
    from lakehook.cli_commands.api_docs import main

    page = tmp_path / "api.md"
    page.write_text("# HTTP API\n\nold\n")
    assert main(["--check", "--path", str(page)]) == 1
    assert main(["--path", str(page)]) == 0 and main(["--check", "--path", str(page)]) == 0


def test_schema_rendering() -> None:
    assert type_of({"$ref": "#/components/schemas/AssetEvent"}) == "[AssetEvent](#assetevent)"
    assert type_of({"type": "array", "items": {"type": "string"}}) == "string[]"
    assert type_of({"anyOf": [{"type": "integer"}, {"type": "null"}]}) == "integer \\| null"
