"""``lakehook apply -f lakehook.yaml``: declarative producers, assets, aliases and rules.

Each object is compared with what ``GET`` answers: ``create`` when it is missing, ``update`` when a
field it declares differs, ``unchanged`` otherwise (fields the file leaves out, such as defaults the
server fills in, are not compared). Applying twice changes nothing the second time.

Before anything is written, every object is sent as ``PUT ...?dryRun=true``: the server validates it as
the real write would (targets, URL policy, secrets) and writes nothing. If any object is refused, the
refusals are listed and nothing is applied; ``--dry-run`` stops after this step, and lists for each rule the runs
writing it would start now (the API's ``wouldStart``: the resolver's plan, as explain makes it).

If a write is refused after the dry runs passed (a race with another writer), applying stops there: what
was written is reported as ``applied`` (a producer created before the refusal with its secret, which is
shown only then), the rest as not applied, and the exit code is 1.

``--prune`` also deletes the rules on the stack that the file does not declare, after listing them and
asking (``--yes`` for scripts). Producers, assets and aliases are never deleted: the API has no route for it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lakehook.answers.apply import SINGULAR, ChangeAnswer
from lakehook.cli_commands.api import ApiClient, ApiError, CliError, path_part
from lakehook.cli_commands.inputs import read_text, yaml_document
from lakehook.cli_commands.manage import confirm, pages
from lakehook.cli_commands.output import emit, err, error_document
from lakehook.client.push import instant_ms

# kind -> (the id field, where an object is PUT)
KINDS: dict[str, tuple[str, str]] = {
    "producers": ("producerId", "/producers/{}"),
    "assets": ("assetKey", "/assets"),
    "aliases": ("name", "/aliases/{}"),
    "rules": ("ruleId", "/rules/{}"),
}


@dataclass
class Change:
    kind: str
    id: str
    action: str  # create | update | unchanged
    body: dict[str, Any]
    changed: list[str] = field(default_factory=list)
    secret: str | None = None
    done: bool = False
    # What the dry run checks, when not the body: a rule naming an alias the file declares, resolved as the
    # API will once the alias is written (the dry run comes before any write).
    check_body: dict[str, Any] | None = None
    # A rule's dry run: the runs writing it would start now (the API's wouldStart; None for other kinds)
    would_start: list[dict[str, Any]] | None = None


def load(path: str) -> dict[str, list[dict[str, Any]]]:
    """The file's objects per kind; each kind is a list of objects or a mapping of id -> object."""
    where = "stdin" if path == "-" else path
    document = yaml_document(read_text(path, "the config"), where) or {}
    if not isinstance(document, dict):
        raise CliError(f"{path}: expected a mapping with producers, assets, aliases and rules")
    unknown = sorted(set(document) - set(KINDS))
    if unknown:
        raise CliError(f"{path}: unknown section(s) {', '.join(unknown)}; expected {', '.join(KINDS)}")
    return {kind: _section(path, kind, id_field, document.get(kind)) for kind, (id_field, _) in KINDS.items()}


def _section(path: str, kind: str, id_field: str, section: Any) -> list[dict[str, Any]]:
    """One kind's objects: a list of objects, or a mapping of id -> object, each with its id, none twice."""
    section = section or []
    if isinstance(section, dict):
        section = [{id_field: key, **(value or {})} for key, value in section.items()]
    if not isinstance(section, list) or not all(isinstance(o, dict) for o in section):
        raise CliError(f"{path}: {kind} must be a list of objects or a mapping of id to object")
    for item in section:
        if not isinstance(item.get(id_field), str):
            raise CliError(f"{path}: every entry of {kind} needs a {id_field}")
    ids = [o[id_field] for o in section]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise CliError(f"{path}: {kind} declares {', '.join(twice)} twice")
    return section


def differences(desired: Any, current: Any, prefix: str = "") -> list[str]:
    """The declared fields whose values differ from the current ones (dotted paths)."""
    if isinstance(desired, dict) and isinstance(current, dict):
        found: list[str] = []
        for key, value in desired.items():
            found += differences(value, current.get(key), f"{prefix}{key}.")
        return found
    if isinstance(desired, list) and isinstance(current, list) and len(desired) == len(current):
        found = []
        for index, (want, have) in enumerate(zip(desired, current, strict=True)):
            found += differences(want, have, f"{prefix}{index}.")
        return found
    if desired == current or _same_instant(desired, current):
        return []
    return [prefix.rstrip(".")]


def _same_instant(desired: Any, current: Any) -> bool:
    """An instant written as ISO 8601 in the file and answered as epoch ms (or the other way) is the same."""
    if not (isinstance(desired, str | int) and isinstance(current, str | int)) or type(desired) is type(current):
        return False
    if isinstance(desired, bool) or isinstance(current, bool):
        return False
    try:
        return instant_ms(desired) == instant_ms(current)
    except ValueError:
        return False


def _current_assets(api: ApiClient) -> dict[str, dict[str, Any]]:
    assets: dict[str, dict[str, Any]] = {}
    token: str | None = None
    while True:
        page = api.get("/assets", query={"limit": 500, "nextToken": token})
        assets.update({a["assetKey"]: a for a in page.get("items", [])})
        token = page.get("nextToken")
        if not token:
            return assets


def _alias_members(rule: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The members of a declared rule that name an alias alone (``{"alias": name}``, no assetKey)."""
    for group in rule.get("groups") or []:
        for member in (group.get("members") or []) if isinstance(group, dict) else []:
            if isinstance(member, dict) and isinstance(member.get("alias"), str) and "assetKey" not in member:
                yield member


def _names_alias(rule: dict[str, Any]) -> bool:
    return next(_alias_members(rule), None) is not None


def alias_assets(api: ApiClient, objects: dict[str, list[dict[str, Any]]]) -> dict[str, list[str]]:
    """The assets of each alias a declared rule names: as the file declares it (aliases are written before
    rules), else as the stack has it (one GET each); an alias known to neither is left out."""
    declared = {a["name"]: list(a.get("assetKeys") or []) for a in objects["aliases"]}
    found: dict[str, list[str]] = {}
    for name in sorted({m["alias"] for rule in objects["rules"] for m in _alias_members(rule)}):
        if name in declared:
            found[name] = declared[name]
            continue
        status, current = api.request("GET", f"/aliases/{path_part(name)}", accept=(404,))
        if status != 404 and isinstance(current, dict):
            found[name] = list(current.get("assetKeys") or [])
    return found


def resolve_aliases(rule: dict[str, Any], assets: dict[str, list[str]], keep: bool = True) -> dict[str, Any]:
    """The rule as the API stores it: each member naming a known alias becomes one member per asset of it
    (``alias`` kept unless ``keep`` is False). Members naming an unknown alias stay, for the API to refuse."""
    groups = []
    for group in rule.get("groups") or []:
        if not isinstance(group, dict) or not isinstance(group.get("members"), list):
            groups.append(group)
            continue
        members: list[Any] = []
        for member in group["members"]:
            name = member.get("alias") if isinstance(member, dict) and "assetKey" not in member else None
            if not isinstance(name, str) or name not in assets:
                members.append(member)
                continue
            fields = member if keep else {k: v for k, v in member.items() if k != "alias"}
            members.extend({**fields, "assetKey": key} for key in assets[name])
        groups.append({**group, "members": members})
    return {**rule, "groups": groups}


def plan(api: ApiClient, objects: dict[str, list[dict[str, Any]]]) -> list[Change]:
    """What applying the objects would do, from one GET per object (one list for assets)."""
    changes: list[Change] = []
    assets = _current_assets(api) if objects["assets"] else {}
    aliased = alias_assets(api, objects) if any(_names_alias(r) for r in objects["rules"]) else {}
    declared_aliases = {a["name"] for a in objects["aliases"]}
    for kind, (id_field, path) in KINDS.items():
        for desired in objects[kind]:
            ident = desired[id_field]
            body = {k: v for k, v in desired.items() if k != id_field or kind in ("assets", "rules")}
            compared, check = body, None
            if kind == "rules" and _names_alias(body):
                compared, check = _rule_bodies(body, aliased, declared_aliases)
            current = assets.get(ident) if kind == "assets" else _current(api, path, ident)
            if current is None:
                changes.append(Change(kind, ident, "create", body, check_body=check))
                continue
            changed = differences(compared, current)
            action = "update" if changed else "unchanged"
            changes.append(Change(kind, ident, action, body, changed, check_body=check))
    return changes


def _rule_bodies(
    body: dict[str, Any], aliased: dict[str, list[str]], declared_aliases: set[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A rule naming aliases as compared with the stack's (each alias resolved) and as its dry run checks it: the
    file's own aliases are not on the stack yet when the dry run checks, so their assets stand in."""
    compared = resolve_aliases(body, aliased)
    check = resolve_aliases(body, {n: a for n, a in aliased.items() if n in declared_aliases}, keep=False)
    return compared, check


def _current(api: ApiClient, path: str, ident: str) -> Any:
    """The object as the stack has it (one GET), None when it has none."""
    status, current = api.request("GET", path.format(path_part(ident)), accept=(404,))
    return None if status == 404 else current


def _path(change: Change) -> str:
    return KINDS[change.kind][1].format(path_part(change.id))


def validate(api: ApiClient, changes: list[Change]) -> list[str]:
    """Every object's ``PUT ?dryRun=true``; the refusals, one line per object (empty when all pass)."""
    problems: list[str] = []
    for change in changes:
        try:
            _, answer = api.request("PUT", _path(change), query={"dryRun": True}, body=change.check_body or change.body)
        except ApiError as exc:
            problems.append(f"{SINGULAR[change.kind]} {change.id}: {exc}")
            continue
        if change.kind == "rules" and isinstance(answer, dict) and isinstance(answer.get("wouldStart"), list):
            change.would_start = answer["wouldStart"]
    return problems


def prunable(api: ApiClient, objects: dict[str, list[dict[str, Any]]]) -> list[Change]:
    """The rules on the stack the file does not declare (``--prune``). Rules are the kind the API deletes;
    producers, assets and aliases are never pruned."""
    declared = {r["ruleId"] for r in objects["rules"]}
    return [Change("rules", r["ruleId"], "delete", {}) for r in pages(api, "/rules") if r["ruleId"] not in declared]


def execute(api: ApiClient, changes: list[Change]) -> None:
    """Write each change in order (puts, then deletes); each one written is marked ``done``. A refusal
    stops here: what was written stays written, and is reported with the producers' secrets."""
    for change in changes:
        if change.action == "unchanged":
            continue
        try:
            if change.action == "delete":
                api.request("DELETE", _path(change))
                answer: Any = None
            else:
                answer = api.request("PUT", _path(change), body=change.body)[1]
        except ApiError as exc:
            raise ApiError(exc.status, f"{SINGULAR[change.kind]} {change.id}: {exc}", exc.body) from exc
        except CliError as exc:  # unreachable mid-way: the write may or may not have happened
            raise type(exc)(f"{SINGULAR[change.kind]} {change.id}: {exc}") from exc
        change.done = True
        if change.kind == "producers" and isinstance(answer, dict) and answer.get("secret"):
            change.secret = str(answer["secret"])


def _would_start(runs: list[dict[str, Any]] | None) -> Iterator[str]:
    """A rule's dry run: the runs writing it would start now, one line each (the versions each would pin)."""
    if runs is None:
        return
    if not runs:
        yield "           would start no run now"
        return
    yield f"           would start {len(runs)} run{'' if len(runs) == 1 else 's'} now:"
    for run in runs:
        where = f" partition {run['partition']}" if run.get("partition") else ""
        if run.get("window"):
            where += f" window [{run['window'].get('start')}, {run['window'].get('end')})"
        pins = ", ".join(f"{p.get('assetKey')} @ {p.get('snapshotId', '-')}" for p in run.get("inputs") or [])
        yield f"             group {run.get('groupId')}{where}: {pins}"


def _text(result: dict[str, Any]) -> Iterator[str]:
    for change in result["changes"]:
        detail = f"  ({', '.join(change['changed'])})" if change.get("changed") else ""
        missed = "  (not applied)" if change.get("applied") is False and change["action"] != "unchanged" else ""
        yield f"{change['action']:<10} {change['kind']} {change['id']}{detail}{missed}"
        yield from _would_start(change.get("wouldStart"))
    counts = result["summary"]
    summary = f"{counts['create']} to create, {counts['update']} to update, {counts['unchanged']} unchanged"
    if "delete" in counts:
        summary += f", {counts['delete']} to delete"
    if result["dryRun"]:
        yield f"dry run: {summary}; nothing applied"
    elif result.get("error"):
        yield f"stopped: {summary}; only the changes not marked (not applied) were written"
    else:
        yield f"applied: {summary}"
    for change in result["changes"]:
        if change.get("secret"):
            yield f"secret for producer {change['id']} (shown once, store it now): {change['secret']}"


def _refuse_on_problems(problems: list[str]) -> None:
    """CliError naming the objects the dry run refused (nothing is applied then)."""
    if len(problems) == 1:
        raise CliError(f"{problems[0]} (nothing applied)")
    if problems:
        raise CliError(f"{len(problems)} objects refused, nothing applied:\n  " + "\n  ".join(problems))


def _confirm_prune(args: argparse.Namespace, pruned: list[Change]) -> None:
    """Name each rule ``--prune`` deletes and ask; CliError, with nothing applied, unless confirmed."""
    for change in pruned:
        print(f"--prune deletes rule {change.id} (not in {args.file}; its triggers stay)", file=err())
    if not confirm(args, f"delete {len(pruned)} rule(s) the file no longer declares?"):
        raise CliError("nothing applied: the deletions were not confirmed")


def apply(api: ApiClient, args: argparse.Namespace) -> int:
    objects = load(args.file)
    changes = plan(api, objects)
    pruned = prunable(api, objects) if args.prune else []
    _refuse_on_problems(validate(api, changes))
    changes += pruned
    if pruned and not args.dry_run:
        _confirm_prune(args, pruned)
    summary = {action: sum(c.action == action for c in changes) for action in ("create", "update", "unchanged")}
    if args.prune:
        summary["delete"] = len(pruned)
    failure: CliError | None = None
    if not args.dry_run:
        try:
            execute(api, changes)
        except CliError as exc:
            failure = exc
    result: dict[str, Any] = {
        "dryRun": bool(args.dry_run),
        "changes": [ChangeAnswer.from_domain(c, None if args.dry_run else c.done).dump() for c in changes],
        "summary": summary,
    }
    if failure is not None:
        # What was written stays written: say so, with any producer secret created before the refusal.
        result["error"] = error_document(failure)["error"]
    emit(args.output, result, _text)
    if failure is not None:
        print(f"lakehook: error: {failure}", file=err())
        return failure.exit_code
    return 0
