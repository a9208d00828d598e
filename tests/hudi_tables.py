"""Real Hudi tables for tests and benchmarks: Apache Hudi's sample tables (tests/data/hudi), grown commit by commit.

No Python library writes Hudi tables (the ``hudi`` binding reads only), so the tables are ones Hudi wrote
(see tests/data/hudi/README.md). :class:`StagedHudiTable` unpacks one and holds back the files of its
completed instants; :meth:`StagedHudiTable.reveal` moves the next instants' files into the timeline, in
instant order, as Hudi's writer left them.
"""

from __future__ import annotations

import re
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

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
    return into / name


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

    def reveal(self, versions: int = 1) -> list[int]:
        """Put back the files of the next instants until ``versions`` more completed versions are visible."""
        shown: list[int] = []
        timeline = timeline_dir(self.root)
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
