"""Real Delta tables for tests: the tables delta-rs and Delta (Spark) test themselves with (tests/data/delta).

:data:`CORPUS` names each table as ``<origin>/<table>`` (see tests/data/delta/README.md). :func:`rows_at` is
what the reference reader, the ``deltalake`` package (delta-rs), reports as a version's row count.
:class:`StagedDeltaTable` copies one and holds back its commit files, so a poller sees the table grow one
version at a time as its writer left it: every file is the writer's own, only when each appears is staged.
"""

from __future__ import annotations

import shutil
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

DATA = Path(__file__).parent / "data" / "delta"
CORPUS = sorted(f"{p.parent.name}/{p.name}" for p in DATA.glob("*/*") if (p / "_delta_log").is_dir())
# the tables whose log holds a checkpoint: a log cleanup could leave that checkpoint alone
CHECKPOINTED = sorted(
    name for name in CORPUS if any(".checkpoint." in p.name for p in (DATA / name / "_delta_log").iterdir())
)


def copy(name: str, into: Path) -> Path:
    """A copy of corpus table ``name`` under ``into``: the table's root."""
    root = into / name.replace("/", "__")
    shutil.copytree(DATA / name, root)
    return root


def rows_at(location: Path | str, version: int) -> int | None:
    """The rows ``deltalake`` finds in the table at ``version``: read from its data files, or, where those are
    not in the corpus, the sum of the files' ``numRecords`` statistics; None when it cannot tell (the version is
    gone, the table has deletion vectors, a file has no statistics)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            table = DeltaTable(str(location), version=version)
        except Exception:
            return None
        if "deletionVectors" in (table.protocol().reader_features or []):
            return None  # deltalake reads no deletion vectors, and statistics count the deleted rows too
        try:
            return int(table.to_pyarrow_table().num_rows)
        except Exception:
            counts = pa.table(table.get_add_actions(flatten=True)).column("num_records").to_pylist()
            return None if any(c is None for c in counts) else int(sum(counts))


@dataclass
class StagedDeltaTable:
    """A corpus table whose log starts empty and grows one commit file at a time."""

    root: Path
    held: Path
    pending: list[Path] = field(default_factory=list)

    @classmethod
    def of(cls, name: str, into: Path) -> StagedDeltaTable:
        root = copy(name, into)
        held = into / "held"
        held.mkdir()
        log = root / "_delta_log"
        pending = []
        for entry in sorted(log.iterdir()):
            if entry.is_file():  # commits, checkpoints, _last_checkpoint, checksums: all come back in order
                pending.append(Path(shutil.move(str(entry), held / entry.name)))
        return cls(root, held, pending)

    def reveal(self, through: int) -> None:
        """Put back every log file of the versions up to ``through``."""
        for entry in [p for p in self.pending if p.name[:20].isdigit() and int(p.name[:20]) <= through]:
            shutil.move(str(entry), self.root / "_delta_log" / entry.name)
            self.pending.remove(entry)
