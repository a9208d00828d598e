"""``lakehook-client``: the client's command line (standard library only).

    lakehook-client dbt-verdicts target/run_results.json --manifest target/manifest.json \\
        --asset-map assets.json --snapshot iceberg://glue/dw_db/orders=7001:12 \\
        --url https://api.example.com/prod --producer-id dbt-tests      # secret: $LAKEHOOK_PRODUCER_SECRET

pushes one quality verdict per tested model (:mod:`lakehook.client.dbt`) and prints one JSON line per result;
``--dry-run`` prints the events instead. Exit 0 when every verdict was recorded (ACCEPTED or DUPLICATE), 1 when any
was refused, 2 on a usage or input error (named on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from lakehook.client.dbt import DbtResultsError, dbt_verdicts
from lakehook.client.push import PushClient, PushError

SECRET_ENV = "LAKEHOOK_PRODUCER_SECRET"
URL_ENV = "LAKEHOOK_URL"


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="lakehook-client", description="lakehook's producer client")
    commands = root.add_subparsers(dest="command", required=True)
    dbt = commands.add_parser("dbt-verdicts", help="push dbt test results as quality verdicts, one per tested model")
    dbt.add_argument("run_results", type=Path, help="dbt's target/run_results.json")
    dbt.add_argument("--manifest", type=Path, required=True, help="dbt's target/manifest.json")
    dbt.add_argument(
        "--asset-map",
        type=Path,
        required=True,
        help='JSON: model unique_id, name or database.schema.alias -> asset key, or {"assetKey", "snapshotId", ...}',
    )
    dbt.add_argument(
        "--snapshot",
        action="append",
        default=[],
        metavar="ASSET_KEY=SNAPSHOT_ID[:SEQUENCE_NUMBER]",
        help="the snapshot the tests read (Iceberg: with its sequence number); repeat per asset",
    )
    dbt.add_argument("--url", default=os.environ.get(URL_ENV), help=f"the API's base URL (default ${URL_ENV})")
    dbt.add_argument("--producer-id", help=f"the producer that pushes (its secret in ${SECRET_ENV})")
    dbt.add_argument("--dry-run", action="store_true", help="print the verdict events, push nothing")
    return root


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    args = parser().parse_args(argv)
    try:
        verdicts = dbt_verdicts(
            _json(args.run_results),
            _json(args.manifest),
            _json(args.asset_map),
            snapshots=_snapshots(args.snapshot),
        )
        client = None if args.dry_run else _client(args)
    except (DbtResultsError, OSError, ValueError) as exc:
        print(f"lakehook-client dbt-verdicts: {exc}", file=err)
        return 2
    for model in verdicts.unmapped:
        print(f"lakehook-client dbt-verdicts: {model} is tested but not in the asset map: no verdict", file=err)
    if client is None:
        for event in verdicts.events:
            print(json.dumps(event, sort_keys=True), file=out)
        return 0
    return _push(client, verdicts.events, out, err)


def _push(client: PushClient, events: list[dict[str, Any]], out: TextIO, err: TextIO) -> int:
    if not events:
        return 0
    try:
        results = client.send_all(events)
    except PushError as exc:
        print(f"lakehook-client dbt-verdicts: {exc}", file=err)
        return 1
    for event, result in zip(events, results, strict=True):
        line = {"assetKey": event["assetKey"], "eventType": event["eventType"], "status": result.status}
        if result.reason:
            line["reason"] = result.reason
        print(json.dumps(line, sort_keys=True), file=out)
    return 0 if all(r.status in ("ACCEPTED", "DUPLICATE", "STALE") for r in results) else 1


def _client(args: argparse.Namespace) -> PushClient:
    secret = os.environ.get(SECRET_ENV)
    if not args.url or not args.producer_id or not secret:
        raise ValueError(f"pushing needs --url (or ${URL_ENV}), --producer-id and ${SECRET_ENV}; or --dry-run")
    return PushClient(args.url, args.producer_id, secret)


def _json(path: Path) -> Mapping[str, Any]:
    try:
        value = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(value, Mapping):
        raise ValueError(f"{path} is not a JSON object")
    return value


def _snapshots(given: list[str]) -> dict[str, dict[str, int]]:
    found: dict[str, dict[str, int]] = {}
    for text in given:
        key, sep, pin = text.rpartition("=")
        snapshot, _, sequence = pin.partition(":")
        if not sep or not key or not snapshot.isdigit() or (sequence and not sequence.isdigit()):
            raise ValueError(f"--snapshot {text!r} is not ASSET_KEY=SNAPSHOT_ID[:SEQUENCE_NUMBER]")
        found[key] = {"snapshotId": int(snapshot), **({"sequenceNumber": int(sequence)} if sequence else {})}
    return found


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
