"""lakehook's version: one semantic version, written once (``lakehook.version.__version__``), which the three
distributions build with, their pins on each other name, the CLI prints, every API answer carries and the
changelog's newest release states (docs/upgrade.md#releasing)."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest

from lakehook.api.app import VERSION_HEADER, build_app
from lakehook.cli import main
from lakehook.version import __version__
from tests.support import ROOT, api_event

SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?")
PYPROJECTS = [ROOT / "pyproject.toml", *sorted((ROOT / "distributions").glob("*/pyproject.toml"))]
SIBLINGS = ("lakehook", "lakehook-client", "lakehook-tools")
RELEASE = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?$", re.M)


def test_the_version_is_semantic() -> None:
    assert SEMVER.fullmatch(__version__), __version__


@pytest.mark.parametrize("path", PYPROJECTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_distribution_takes_its_version_from_the_one_constant(path: Any) -> None:
    document = tomllib.loads(path.read_text(encoding="utf-8"))
    assert "version" not in document["project"] and "version" in document["project"]["dynamic"]
    assert document["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "lakehook.version.__version__"}


def test_the_distributions_pin_each_other_at_this_version() -> None:
    pins: list[tuple[str, str]] = []
    for path in PYPROJECTS:
        project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
        extras = project.get("optional-dependencies", {}).values()
        for requirement in [*project.get("dependencies", []), *(r for group in extras for r in group)]:
            name = re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0]
            if name in SIBLINGS:
                pins.append((requirement, requirement.rpartition("==")[2]))
    assert pins, "the tools depend on the deployable and the client"
    assert all(version == __version__ for _, version in pins), pins


def test_lakehook_version_prints_it_and_succeeds(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"lakehook {__version__}\n"


def test_every_api_answer_names_the_version() -> None:
    answer = build_app().resolve(api_event("GET", "/no-such-route", None), None)
    assert answer["statusCode"] == 404
    assert answer["multiValueHeaders"][VERSION_HEADER] == [__version__]


def test_the_changelog_starts_with_unreleased_then_this_version() -> None:
    releases = [(m["version"], m["date"]) for m in RELEASE.finditer((ROOT / "CHANGELOG.md").read_text("utf-8"))]
    assert releases[0] == ("Unreleased", None)
    newest, date = releases[1]
    assert newest == __version__ and date, releases[:2]
    versions = [tuple(int(n) for n in SEMVER.fullmatch(v).groups()) for v, _ in releases[1:]]  # type: ignore[union-attr]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)


def test_the_docs_name_this_version_wherever_they_name_one() -> None:
    pages = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    named = {(p.name, m) for p in pages for m in re.findall(r"lakehook (\d+\.\d+\.\d+)", p.read_text("utf-8"))}
    assert {page for page, _ in named} >= {"cli.md", "upgrade.md"}
    assert {version for _, version in named} == {__version__}, sorted(named)
