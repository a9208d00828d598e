"""Real Hudi tables for tests and benchmarks: Apache Hudi's sample tables (tests/data/hudi), grown commit by commit.

No Python library writes Hudi tables (the ``hudi`` binding reads only), so the tables are ones Hudi wrote
(see tests/data/hudi/README.md). :class:`StagedHudiTable` unpacks one and holds back the files of its
completed instants; :meth:`StagedHudiTable.reveal` moves the next instants' files into the timeline, in
instant order, as Hudi's writer left them. :func:`upgrade_timeline` does to a 0.x table what Hudi's
0.x→1.x upgrade does to its timeline; :meth:`StagedHudiTable.reveal_skewed` commits an instant as a writer
whose clock is ahead would.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "hudi"
V6_COW = "v6_simplekeygen_nonhivestyle_overwritetable"
V8_COW = "v8_nonpartitioned"
V9_MOR = "v9_txns_simple_nometa"
_INSTANT = re.compile(r"^(\d{14,17})[._]")
_COMPLETED = re.compile(r"^\d{14,17}(?:_\d{14,17})?\.(commit|deltacommit|replacecommit)$")


def unpack(name: str, into: Path) -> Path:
    """The sample table ``name`` unpacked under ``into``: the table's root."""
    with zipfile.ZipFile(DATA / f"{name}.zip") as archive:
        members = [m for m in archive.namelist() if not m.startswith("__MACOSX/")]
        archive.extractall(into, members)
    return into / members[0].split("/", 1)[0]  # the table's own name (mor_… zips hold a same-named table)


def all_tables() -> list[str]:
    """Every sample table in tests/data/hudi."""
    return sorted(p.stem for p in DATA.glob("*.zip"))


def timeline_dir(root: Path) -> Path:
    timeline = root / ".hoodie" / "timeline"
    return timeline if timeline.is_dir() else root / ".hoodie"


@dataclass
class StagedHudiTable:
    """A sample table whose timeline starts empty and grows one completed instant at a time."""

    root: Path
    held: Path
    pending: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, name: str, into: Path) -> StagedHudiTable:
        root = unpack(name, into / "tables")
        held = into / "held"
        held.mkdir()
        timeline = timeline_dir(root)
        instants = set()
        for entry in timeline.iterdir():
            match = _INSTANT.match(entry.name)
            if entry.is_file() and match:
                instants.add(int(match.group(1)))
                shutil.move(str(entry), held / entry.name)
        return cls(root, held, sorted(instants))

    @property
    def location(self) -> str:
        return str(self.root)

    def reveal(self, versions: int = 1, into: Path | None = None) -> list[int]:
        """Put back the files of the next instants until ``versions`` more completed versions are visible."""
        shown: list[int] = []
        timeline = into or timeline_dir(self.root)
        while self.pending and len(shown) < versions:
            instant = self.pending.pop(0)
            files = sorted(self.held.glob(f"{instant}*"))
            for held in files:
                shutil.move(str(held), timeline / held.name)
            if any(_COMPLETED.match(f.name) for f in files):
                shown.append(instant)
        return shown

    def reveal_all(self) -> list[int]:
        return self.reveal(len(self.pending))

    def reveal_skewed(self, years: int = 50) -> int:
        """Commit the next instant as a writer whose clock is ``years`` ahead: its files, renamed to that time."""
        instant = self.pending.pop(0)
        timeline = timeline_dir(self.root)
        future = skewed(instant, years)
        for held in sorted(self.held.glob(f"{instant}*")):
            name = held.name.replace(str(instant), str(future))
            name = re.sub(
                r"^(\d{14,17})_(\d{14,17})\.", lambda m: f"{m.group(1)}_{skewed(int(m.group(2)), years)}.", name
            )
            shutil.move(str(held), timeline / name)
        return future

    def reveal_undatable(self) -> int:
        """Commit the next instant with a time that cannot be a date (month 13), its completion time too: the
        instant time, as a number, is then above every commit of its year."""
        instant = self.pending.pop(0)
        timeline = timeline_dir(self.root)
        for held in sorted(self.held.glob(f"{instant}*")):
            name = re.sub(r"(?<![0-9])(\d{4})\d\d(\d{8,11})(?=[._])", r"\g<1>13\2", held.name)
            shutil.move(str(held), timeline / name)
        return undatable(instant)


def undatable(instant: int) -> int:
    """The instant time with its month made 13."""
    text = str(instant)
    return int(f"{text[:4]}13{text[6:]}")


def skewed(instant: int, years: int) -> int:
    text = str(instant)
    return int(f"{int(text[:4]) + years}{text[4:]}")


@cache
def _avro_schemas() -> dict[str, Any]:
    """The Avro schemas Hudi 1.x writes commit metadata with, as its own files carry them (v8 / v9 tables)."""
    import fastavro

    schemas: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as into:
        for name, action in ((V8_COW, "commit"), (V9_MOR, "deltacommit"), (V9_MOR, "replacecommit")):
            root = unpack(name, Path(into) / action)
            first = sorted((root / ".hoodie" / "timeline").glob(f"*_*.{action}"))[0]
            with first.open("rb") as handle:
                schemas[action] = fastavro.reader(handle).writer_schema
    return schemas


def completion_of(path: Path) -> str:
    """What Hudi's upgrade takes as a 0.x instant's completion time: its file's modification time."""
    moment = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"


def upgrade_timeline(root: Path, instants: list[int] | None = None, *, finish: bool = True) -> None:
    """Hudi's 0.x→1.x upgrade (``SevenToEightUpgradeHandler``) on the table's timeline.

    It creates ``.hoodie/timeline/``; rewrites each completed ``<instant>.<action>`` there as
    ``<instant>_<completion>.<action>`` (completion: the old file's modification time) with the commit
    metadata in Avro, and deletes the old file; renames the requested / inflight files into it; and, last,
    writes ``hoodie.properties`` with table version 8, timeline layout 2 and ``hoodie.timeline.path``.
    ``instants`` limits it to some instants (a table mid-upgrade); ``finish=False`` leaves the properties.
    """
    import fastavro

    hoodie = root / ".hoodie"
    timeline = hoodie / "timeline"
    timeline.mkdir(exist_ok=True)
    for path in sorted(hoodie.iterdir()):
        match = _INSTANT.match(path.name)
        if not path.is_file() or match is None or (instants is not None and int(match.group(1)) not in instants):
            continue
        completed = _COMPLETED.match(path.name)
        if completed is None:
            path.rename(timeline / path.name)
            continue
        action = completed.group(1)
        stem = path.name.split(".", 1)[0]
        buffer = io.BytesIO()
        record = json.loads(path.read_bytes() or b"{}")
        fastavro.writer(buffer, fastavro.parse_schema(_avro_schemas()[action]), [record])
        (timeline / f"{stem}_{completion_of(path)}.{action}").write_bytes(buffer.getvalue())
        path.unlink()
    if finish:
        properties = hoodie / "hoodie.properties"
        lines = [
            line
            for line in properties.read_text().splitlines()
            if not line.startswith(("hoodie.table.version=", "hoodie.timeline.layout.version="))
        ]
        lines += ["hoodie.table.version=8", "hoodie.timeline.layout.version=2", "hoodie.timeline.path=timeline"]
        properties.write_text("\n".join(lines) + "\n")
