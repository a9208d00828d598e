"""Write this release's golden items: ``python -m tests.golden.generate`` (from the repository root, once per release).

Runs the scenario (``tests/golden/scenario.py``) through the real DynamoDB stores on moto, and writes every item
the table then holds, one file per kind, with what this release's readers answer for them, to
``tests/golden/<version>/``. A release's golden items are written once and never edited: it refuses to write
over a directory that exists (docs/upgrade.md#stored-items).
"""

from __future__ import annotations

import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws

from lakehook.version import __version__
from tests.contracts.conftest import dynamodb_backend
from tests.golden.scenario import READS, kind_of, plain, to_json, write

GOLDEN = Path(__file__).resolve().parent
TABLE = "lakehook-golden"


def generate() -> dict[str, dict[str, Any]]:
    """Each kind's file: its items (sorted by key) and what the readers answered."""
    with mock_aws():
        backend = dynamodb_backend(TABLE)
        write(backend)
        table = boto3.resource("dynamodb", region_name="us-east-1").Table(TABLE)
        items: list[dict[str, Any]] = []
        scan: dict[str, Any] = {}
        while True:
            page = table.scan(**scan)
            items += page["Items"]
            if "LastEvaluatedKey" not in page:
                break
            scan = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
        by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for item in sorted(items, key=lambda i: (i["PK"], i["SK"])):
            by_kind[kind_of(item)].append(to_json(item))
        missing = set(READS) - set(by_kind)
        if missing:
            raise SystemExit(f"the scenario wrote no item of kinds {sorted(missing)}")
        return {kind: {"items": by_kind[kind], "read": plain(READS[kind](backend))} for kind in sorted(by_kind)}


def main() -> int:
    out = GOLDEN / __version__
    if out.exists():
        print(f"{out} exists: a release's golden items are never rewritten", file=sys.stderr)
        return 1
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    files = generate()
    out.mkdir()
    for kind, content in files.items():
        (out / f"{kind}.json").write_text(json.dumps(content, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(files)} kinds, {sum(len(c['items']) for c in files.values())} items in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
