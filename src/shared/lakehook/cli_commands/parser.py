"""The API commands' arguments, and running one with clear errors and exit codes.

Exit codes: 0 done · 1 the API refused (4xx/5xx, the server's message on stderr) or a bad argument
· 2 the API is unreachable · 3 ``coverage`` found a gap.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

from lakehook.cli_commands import access, apply, backtest, commands, manage, output, restore, secrets, watch
from lakehook.cli_commands.api import DEFAULT_URL, ApiClient, CliError

Command = Callable[[ApiClient, argparse.Namespace], int]


def add_request_key(sub: argparse.ArgumentParser) -> None:
    """``--request-key``: the Idempotency-Key of a request that starts a run (a new UUID unless given)."""
    sub.add_argument(
        "--request-key",
        default=None,
        metavar="KEY",
        help="the request's Idempotency-Key (default: a new UUID); the same key again starts nothing new and "
        "answers the first answer",
    )


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
    sub.add_argument("--prune", action="store_true", help="also delete the rules the file does not declare")
    sub.add_argument("--yes", action="store_true", help="do not ask before --prune deletes")

    sub = command("explain", commands.explain, "why a rule has (not) run")
    sub.add_argument("rule", metavar="RULE", help="rule id")

    sub = command("triggers", commands.triggers, "list triggers, newest first")
    sub.add_argument("--rule", default=None, help="one rule's triggers (default: every rule's)")
    sub.add_argument("--status", default=None, type=str.upper, choices=commands.TRIGGER_STATUSES)
    sub.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")

    sub = command("trigger", commands.trigger, "one trigger: status, whether and when it retries, why it failed")
    sub.add_argument("key", metavar="KEY", help="trigger key")

    sub = command("evaluate", manage.evaluate, "evaluate a rule now and claim what is ready")
    sub.add_argument("rule", metavar="RULE", help="rule id")
    sub.add_argument("--force", action="store_true", help="a manual run of the current versions, under its own key")
    sub.add_argument(
        "--partition",
        default=None,
        metavar="KEY",
        help="with --force, for a group with partitionBy: the partition to run (dt=2026-12-01)",
    )
    sub.add_argument("--group", default=None, metavar="GROUP", help="only this group (groupId)")
    add_request_key(sub)

    sub = command("backtest", backtest.backtest, "try a rule on the stored history: the runs it would have started")
    sub.add_argument("rule", metavar="RULE", help="rule id")
    sub.add_argument(
        "-f",
        "--file",
        default=None,
        help="the rule to try (YAML or JSON, as PUT takes it; - for stdin); default: the stored rule",
    )
    sub.add_argument("--from", dest="start", default=None, help="ISO 8601 (default: the oldest event kept)")
    sub.add_argument("--to", dest="end", default=None, help="ISO 8601 (default: now)")

    sub = command("watch", watch.watch, "follow new triggers and their status live")
    sub.add_argument("--rule", default=None, help="one rule's triggers (default: every rule's)")
    sub.add_argument("--interval", type=float, default=2.0, help="seconds between polls (default 2)")
    sub.add_argument("--count", type=int, default=None, help="stop once this many triggers have settled")
    sub.add_argument("--timeout", type=float, default=None, help="stop after this many seconds (exit 3 with --count)")

    sub = command("complete", manage.complete, "report a run's end and its outlets")
    sub.add_argument("key", metavar="KEY", help="trigger key")
    sub.add_argument("--status", required=True, type=str.upper, choices=("SUCCEEDED", "FAILED"))
    sub.add_argument(
        "--outlet",
        dest="outlets",
        action="append",
        type=manage.outlet,
        metavar="ASSET=SNAPSHOT|JSON",
        help="an outlet event: ASSET=SNAPSHOT_ID for a committed snapshot, or the event as JSON (repeatable)",
    )
    sub.add_argument("--token", default=None, help="the invocation's completionToken (default: management credentials)")

    add_resource_commands(command)

    sub = command("retry", commands.retry, "dispatch a FAILED trigger again under the same key")
    sub.add_argument("key", metavar="KEY", help="trigger key")

    sub = command("replay", commands.replay, "re-run a trigger on exactly its pinned inputs")
    sub.add_argument("key", metavar="KEY", help="trigger key")
    sub.add_argument("--dry-run", action="store_true", help="run the pre-flight checklist only")
    sub.add_argument("--start-from", default=None, metavar="TASK", help="the task or step the rerun starts at")
    sub.add_argument(
        "--var",
        action="append",
        metavar="NAME=VALUE",
        help="a variable the rerun overrides (VALUE as JSON when it is a scalar, e.g. true or 5000; repeatable)",
    )
    add_request_key(sub)

    command("whoami", access.whoami, "the role, scope and allowed actions of the configured credentials")
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


def add_resource_commands(command: Callable[[str, Command, str], argparse.ArgumentParser]) -> None:
    """``rules``, ``assets``, ``producers``, ``aliases``, ``watermarks``, ``secret``, ``restore``: a verb per route."""

    def verbs(name: str, help_: str) -> argparse._SubParsersAction:  # type: ignore[type-arg]
        group = command(name, _needs_verb(name), help_)
        found: argparse._SubParsersAction = group.add_subparsers(dest=f"{name}_verb", metavar="VERB")  # type: ignore[type-arg]
        return found

    def verb(
        group: argparse._SubParsersAction,  # type: ignore[type-arg]
        name: str,
        func: Command,
        help_: str,
    ) -> argparse.ArgumentParser:
        common = argparse.ArgumentParser(add_help=False)
        add_global_options(common, suppress=True)
        sub: argparse.ArgumentParser = group.add_parser(name, help=help_, parents=[common])
        sub.set_defaults(func=run(func))
        return sub

    rules = verbs("rules", "list, show or delete rules")
    verb(rules, "list", manage.rules_list, "every rule").add_argument("--limit", type=int, default=None)
    verb(rules, "get", manage.rules_get, "one rule as stored").add_argument("rule", metavar="RULE")
    sub = verb(rules, "delete", manage.rules_delete, "delete a rule (its triggers stay)")
    sub.add_argument("rule", metavar="RULE")
    sub.add_argument("--yes", action="store_true", help="do not ask")

    assets = verbs("assets", "registered assets and their recorded events")
    verb(assets, "list", manage.assets_list, "every registered asset").add_argument("--limit", type=int, default=None)
    sub = verb(assets, "events", manage.assets_events, "an asset's recorded events, newest first")
    sub.add_argument("asset", metavar="ASSET")
    sub.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")
    sub.add_argument("--start", help="received at or after (ISO 8601 or epoch ms)")
    sub.add_argument("--end", help="received before (ISO 8601 or epoch ms)")
    sub.add_argument("--from-version", type=int, help="snapshots ordered from this one (id, Iceberg: sequence number)")
    sub.add_argument("--to-version", type=int, help="snapshots ordered up to this one, included")

    producers = verbs("producers", "list or show producers, or rotate a signing secret")
    verb(producers, "list", manage.producers_list, "every producer").add_argument("--limit", type=int, default=None)
    verb(producers, "get", manage.producers_get, "one producer (never its secret)").add_argument("producer")
    sub = verb(producers, "rotate", manage.producers_rotate, "a new signing secret, shown once")
    sub.add_argument("producer", metavar="PRODUCER")
    sub.add_argument("--yes", action="store_true", help="do not ask")

    aliases = verbs("aliases", "list or show aliases")
    verb(aliases, "list", manage.aliases_list, "every alias").add_argument("--limit", type=int, default=None)
    verb(aliases, "get", manage.aliases_get, "the assets an alias resolves to").add_argument("name", metavar="NAME")

    marks = verbs("watermarks", "the watermark store: per (namespace, asset, key), with compare-and-set")
    for name, func, help_ in (
        ("get", manage.watermarks_get, "one key, or every key of (namespace, asset) without --key"),
        ("put", manage.watermarks_put, "write a value (JSON); --expected-version for compare-and-set"),
        ("delete", manage.watermarks_delete, "delete a key"),
    ):
        sub = verb(marks, name, func, help_)
        sub.add_argument("--namespace", required=True)
        sub.add_argument("--asset", required=True, help="asset key")
        sub.add_argument("--key", required=name != "get", default=None)
        if name == "put":
            sub.add_argument("--value", required=True, help="the value as JSON")
        if name != "get":
            sub.add_argument("--expected-version", type=int, default=None, help="only if the version is this")

    secret = verbs("secret", "target secrets (webhook signing keys, Airflow / DolphinScheduler credentials)")
    sub = verb(secret, "put", secrets.secret_put, "create or update a secret where the stack's dispatcher reads it")
    sub.add_argument(
        "name",
        metavar="NAME",
        help="e.g. hooks/dwd: under the stack's prefix lakehook/<stack>/ unless it already starts with it "
        "(a rule may name it either way), or an existing secret's ARN",
    )
    sub.add_argument("--value", default=None, help="the value (better: --value-file, out of the shell history)")
    sub.add_argument("--value-file", default=None, metavar="PATH", help="read the value from a file (- for stdin)")
    sub.add_argument("--generate", action="store_true", help="generate 32 random bytes (hex) and print them once")
    sub.add_argument("--stack", default=None, help="a deployed stack's name (env LAKEHOOK_STACK)")

    tokens = verbs("tokens", "scoped bearer tokens of a local stack (docs/cli.md#roles)")
    access.add_grant_arguments(
        verb(tokens, "create", access.tokens_create, "a token with a role and scope, shown once")
    )
    verb(tokens, "list", access.tokens_list, "every token (never the token)").add_argument(
        "--limit", type=int, default=None
    )
    sub = verb(tokens, "revoke", access.tokens_revoke, "revoke a token at once")
    sub.add_argument("token_id", metavar="TOKEN_ID")
    sub.add_argument("--yes", action="store_true", help="do not ask")

    bindings = verbs("role-bindings", "IAM users and roles bound to a role and scope (docs/deploy.md#roles)")
    sub = verb(bindings, "put", access.bindings_put, "bind an IAM user or role ARN")
    sub.add_argument("principal", metavar="ARN")
    access.add_grant_arguments(sub)
    verb(bindings, "list", access.bindings_list, "every binding").add_argument("--limit", type=int, default=None)
    sub = verb(bindings, "delete", access.bindings_delete, "remove a binding")
    sub.add_argument("principal", metavar="ARN")
    sub.add_argument("--yes", action="store_true", help="do not ask")

    restore_ = verbs("restore", "after a point-in-time restore of the table (docs/restore.md)")
    restore.add_arguments(verb(restore_, "reconcile", restore.reconcile, restore.HELP))


def _needs_verb(name: str) -> Command:
    def missing(api: ApiClient, args: argparse.Namespace) -> int:
        raise CliError(f"{name} needs a verb; see: lakehook {name} --help")

    return missing


def run(func: Command) -> Callable[[argparse.Namespace], int]:
    """Build the client from the global options, run the command, and turn failures into exit codes."""

    def runner(args: argparse.Namespace) -> int:
        api = ApiClient(url=args.url, admin_token=args.api_token, region=args.region)
        try:
            return func(api, args)
        except CliError as exc:
            return output.report_error(args.output, exc)

    return runner
