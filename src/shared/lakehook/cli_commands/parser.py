"""The API commands' arguments, and running one with clear errors and exit codes.

Exit codes: 0 done · 1 the API refused (4xx/5xx, the server's message on stderr) or a bad argument
· 2 the API is unreachable · 3 ``coverage`` found a gap.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from lakehook.cli_commands import apply, commands, output
from lakehook.cli_commands.api import DEFAULT_URL, ApiClient, CliError

Command = Callable[[ApiClient, argparse.Namespace], int]


def add_global_options(parser: argparse.ArgumentParser, *, suppress: bool = False) -> None:
    """``--url``, ``--admin-token``, ``--region``, ``--output``; accepted before or after the command."""

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    parser.add_argument(
        "--url",
        default=default(os.environ.get("LAKEHOOK_URL") or DEFAULT_URL),
        help=f"the lakehook API (env LAKEHOOK_URL; default {DEFAULT_URL})",
    )
    parser.add_argument(
        "--admin-token",
        dest="api_token",
        metavar="TOKEN",
        default=default(os.environ.get("LAKEHOOK_ADMIN_TOKEN")),
        help="bearer token of a local stack (env LAKEHOOK_ADMIN_TOKEN); without one, https URLs are SigV4-signed",
    )
    parser.add_argument("--region", default=default(None), help="AWS region to sign for (default: from the URL)")
    parser.add_argument(
        "--output", choices=("text", "json"), default=default("text"), help="text for people, json for scripts"
    )


def add_commands(commands_: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    common = argparse.ArgumentParser(add_help=False)
    add_global_options(common, suppress=True)

    def command(name: str, func: Command, help_: str) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = commands_.add_parser(name, help=help_, parents=[common])
        sub.set_defaults(func=run(func))
        return sub

    sub = command("apply", apply.apply, "create or update producers, assets, aliases and rules from a file")
    sub.add_argument("-f", "--file", required=True, help="the declarative config (YAML; - for stdin)")
    sub.add_argument(
        "--dry-run",
        action="store_true",
        help="validate every object on the server (PUT ?dryRun=true) and show what would change; change nothing",
    )

    sub = command("explain", commands.explain, "why a rule has (not) run")
    sub.add_argument("rule", metavar="RULE", help="rule id")

    sub = command("triggers", commands.triggers, "list triggers, newest first")
    sub.add_argument("--rule", default=None, help="one rule's triggers (default: every rule's)")
    sub.add_argument("--status", default=None, type=str.upper, choices=commands.TRIGGER_STATUSES)
    sub.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")

    sub = command("trigger", commands.trigger, "one trigger: status, whether and when it retries, why it failed")
    sub.add_argument("key", metavar="KEY", help="trigger key")

    sub = command("retry", commands.retry, "dispatch a FAILED trigger again under the same key")
    sub.add_argument("key", metavar="KEY", help="trigger key")

    sub = command("replay", commands.replay, "re-run a trigger on exactly its pinned inputs")
    sub.add_argument("key", metavar="KEY", help="trigger key")
    sub.add_argument("--dry-run", action="store_true", help="run the pre-flight checklist only")

    sub = command("state", commands.state, "an asset's state")
    sub.add_argument("asset", metavar="ASSET", help="asset key, e.g. paimon://lake/ods_db/ods_order_latest")

    sub = command("coverage", commands.coverage, "whether [start, end) of an asset is covered (exit 3 if not)")
    sub.add_argument("asset", metavar="ASSET", help="asset key")
    sub.add_argument("--start", required=True, help="ISO 8601 UTC or epoch ms")
    sub.add_argument("--end", required=True, help="ISO 8601 UTC or epoch ms")
    sub.add_argument("--partition", default=None, help="partition key")

    sub = command("push", commands.push, "sign and send one event as a producer")
    sub.add_argument("--producer", default=os.environ.get("LAKEHOOK_PRODUCER"), help="producer id")
    sub.add_argument("--secret", default=None, help="signing secret (better: env LAKEHOOK_PRODUCER_SECRET)")
    sub.add_argument("--json", default=None, help="the event as JSON, @file, or - for stdin")
    sub.add_argument("--type", dest="event_type", default=None, help="eventType, e.g. SNAPSHOT_COMMITTED")
    sub.add_argument("--asset", default=None, help="assetKey")
    sub.add_argument("--snapshot-id", type=int, default=None)
    sub.add_argument("--sequence-number", type=int, default=None, help="Iceberg: the snapshot's sequence number")
    sub.add_argument("--schema-id", type=int, default=None)
    sub.add_argument("--watermark", default=None, help="epoch ms or ISO 8601")
    sub.add_argument("--commit-time", default=None, help="epoch ms or ISO 8601")
    sub.add_argument("--commit-kind", default=None, help="APPEND, OVERWRITE, COMPACT …")
    sub.add_argument("--tag", default=None)
    sub.add_argument("--manifest-uri", default=None)
    sub.add_argument("--backfill-id", default=None)
    sub.add_argument("--interval-start", default=None)
    sub.add_argument("--interval-end", default=None)
    sub.add_argument("--partition-key", default=None)
    sub.add_argument("--attempts", type=int, default=3, help="tries on 429, 5xx and connection errors (default 3)")


def run(func: Command) -> Callable[[argparse.Namespace], int]:
    """Build the client from the global options, run the command, and turn failures into exit codes."""

    def runner(args: argparse.Namespace) -> int:
        api = ApiClient(url=args.url, admin_token=args.api_token, region=args.region)
        try:
            return func(api, args)
        except CliError as exc:
            print(f"lakehook: error: {exc}", file=output.err())
            return exc.exit_code

    return runner
