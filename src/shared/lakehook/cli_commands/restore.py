"""``lakehook restore reconcile``: after a point-in-time restore, write back the claims made after the restore point.

It works on the restored table and the manifest bucket directly, with your AWS credentials (the stack must not
read the restored table yet: docs/restore.md), so it takes no API URL: ``--table`` (the restored table),
``--manifest-bucket`` (the stack's ``ManifestBucketName`` output) and ``--since`` (the restore point; earlier is
harmless, later misses claims). ``--dry-run`` lists what it would write. ``AWS_ENDPOINT_URL`` points it at another
endpoint (the local stack's moto).
"""

from __future__ import annotations

import argparse
from typing import Any

from lakehook.answers.restore import ReconcileAnswer
from lakehook.cli_commands.api import ApiClient, CliError
from lakehook.cli_commands.output import emit

HELP = "after a table restore: write back, as dispatched, the claims the run manifests since --since prove were made"


def add_arguments(sub: argparse.ArgumentParser) -> None:
    sub.add_argument("--table", required=True, help="the restored table's name")
    sub.add_argument("--manifest-bucket", required=True, help="the stack's manifest bucket (output ManifestBucketName)")
    sub.add_argument("--since", required=True, help="the restore point, ISO 8601 UTC or epoch ms (earlier is harmless)")
    sub.add_argument("--dry-run", action="store_true", help="list the claims it would write; write nothing")


def _since(value: str) -> int:
    from lakehook.domain.time import parse_instant_ms

    try:
        return parse_instant_ms(value)
    except ValueError as exc:
        raise CliError(f"--since: {exc}") from exc


def _text(data: dict[str, Any]) -> list[str]:
    verb = "would write back" if data["dryRun"] else "wrote back"
    lines = [
        f"{data['manifestsRead']} run manifests since {data['since']}: {verb} {len(data['restored'])} claims, "
        f"{len(data['present'])} already in the table, {len(data['refused'])} refused"
    ]
    lines += [f"  {verb}: {r['triggerKey']}" for r in data["restored"]]
    lines += [f"  refused: {r['manifestUri']}: {r['reason']}" for r in data["refused"]]
    lines += [f"  still TRIGGERING (its dispatch began after the restore point): {k}" for k in data["inFlight"]]
    lines += [f"  cursor left: {c['cursor']}: {c['reason']}" for c in data["cursorsLeft"]]
    return lines


def reconcile(api: ApiClient, args: argparse.Namespace) -> int:
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    from lakehook.adapters.dynamodb.trigger_store import DynamoDBTriggerStore
    from lakehook.adapters.s3.manifest_archive import S3ManifestArchive
    from lakehook.adapters.s3.manifest_store import S3ManifestStore
    from lakehook.usecases.restore import ReconcileRestore

    since = _since(args.since)
    session = boto3.session.Session(region_name=args.region) if args.region else boto3.session.Session()
    s3, dynamodb = session.client("s3"), session.resource("dynamodb")
    try:
        table = dynamodb.Table(args.table)
        table.load()  # a clear error for a table that is not there, before anything is read
        use_case = ReconcileRestore(
            S3ManifestArchive(s3, args.manifest_bucket),
            S3ManifestStore(s3, args.manifest_bucket),
            DynamoDBTriggerStore(table),
        )
        report = use_case.reconcile(since, dry_run=args.dry_run)
    except (BotoCoreError, ClientError) as exc:
        raise CliError(f"cannot reconcile table {args.table} with bucket {args.manifest_bucket}: {exc}") from exc
    emit(args.output, ReconcileAnswer.from_domain(report).dump(), _text)
    return 1 if report.refused else 0
