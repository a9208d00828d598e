"""Polling Delta and Hudi needs no table-format library: the poll worker's layer carries neither (docs/packaging.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import write_deltalake

from tests.hudi_tables import V9_MOR, unpack
from tests.lakehouse import rows
from tests.support import ROOT

pytestmark = pytest.mark.integration

# Not in the lakehouse layer (deltalake, hudi, arro3), or deliberately left out of it (polars, pandas, numpy);
# pyarrow is in the layer but the Delta and Hudi readers must not need it either (the Delta reader imports it only
# to read a checkpoint's metaData once log cleanup removed the commit holding it, which this table does not need).
ABSENT = {"deltalake", "hudi", "arro3", "pyarrow", "polars", "pandas", "numpy"}


def test_delta_and_hudi_tables_are_polled_with_none_of_the_table_format_libraries(tmp_path: Path) -> None:
    delta = str(tmp_path / "delta")
    write_deltalake(delta, rows(1))
    write_deltalake(delta, rows(2), mode="append")
    hudi = str(unpack(V9_MOR, tmp_path / "hudi"))
    code = (
        "import sys, json, importlib.abc\n"
        "class Missing(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        f"        if name.split('.')[0] in {sorted(ABSENT)!r}:\n"
        "            raise ImportError(name + ' is not in the poll worker')\n"
        "sys.meta_path.insert(0, Missing())\n"
        "from lakehook.adapters.lakehouse.factory import snapshot_sources\n"
        "from tests.fakes.memory import InMemorySecretStore\n"
        "from lakehook.domain.assets import AssetFormat, AssetSource\n"
        "from lakehook.domain.snapshots import SnapshotCursor\n"
        "sources = snapshot_sources(InMemorySecretStore())\n"
        "found = {}\n"
        f"for fmt, location in (('delta', {delta!r}), ('hudi', {hudi!r})):\n"
        "    source, src = sources(AssetFormat(fmt)), AssetSource(catalog='lake', location=location)\n"
        "    batch = source.snapshots_since(src, SnapshotCursor.beginning(), source.pointer(src), limit=100)\n"
        "    found[fmt] = [s.commit_kind for s in batch.snapshots]\n"
        f"print(json.dumps([found, sorted(m for m in {sorted(ABSENT)!r} if m in sys.modules)]))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src" / "shared"), str(ROOT)])}  # tests.fakes
    answer = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120, env=env
    )
    found, loaded = json.loads(answer.stdout.strip().splitlines()[-1])
    assert found["delta"] == ["WRITE", "WRITE"]
    assert "COMPACT" in found["hudi"] and "CLUSTER" in found["hudi"] and len(found["hudi"]) == 13
    assert loaded == []
