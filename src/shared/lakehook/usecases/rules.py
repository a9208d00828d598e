"""What a rule body is and how it is checked when written (parsing, the members' aliases, the target's secrets);
a stored rule is answered by ``api.rule_answers.RuleAnswer``. The rule routes' use cases: ``usecases.rule_writes``
(``PutRule``, ``DeleteRule``), ``usecases.rule_reads`` (``ReadRules``), ``usecases.rule_explain`` (``ExplainRule``)
and ``usecases.rule_runs`` (``EvaluateRule``); a rule's triggers are read by ``usecases.triggers``."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.aliases import ALIAS_NAME
from lakehook.domain.errors import AuthorizationError, ValidationError
from lakehook.domain.rules import Rule, validate_id
from lakehook.domain.secret_names import AS_GIVEN, ProducerSecrets, SecretNameError, SecretNames
from lakehook.domain.targets import UnusableTarget, name_target_error, secret_refs, write_context
from lakehook.domain.url_policy import UrlPolicy
from lakehook.ports.aliases import AliasStore
from lakehook.ports.store import SecretStore

_WATERMARK_TAGS = ("instant", "window")  # discriminator tags pydantic puts in error locations
DEPLOYED_POLICY = UrlPolicy()


def describe_rule_error(exc: PydanticValidationError) -> tuple[str, str]:
    """One line naming each bad field in the API's camelCase, and the first field."""
    parts: list[str] = []
    fields: list[str] = []
    for error in exc.errors():
        loc = [str(p) for p in error["loc"]]
        loc = [p for i, p in enumerate(loc) if not (p in _WATERMARK_TAGS and i and loc[i - 1] == "watermarkAtLeast")]
        if loc[:1] == ["target"]:
            where, message = name_target_error(error, loc)
        else:
            where, message = ".".join(loc) or "body", error["msg"].removeprefix("Value error, ")
        fields.append(where)
        parts.append(f"{where}: {message}")
    return "; ".join(parts), fields[0] if fields else "body"


def parse_rule(rule_id: str, body: Any, policy: UrlPolicy = DEPLOYED_POLICY) -> Rule:
    """The rule ``PUT /rules/{ruleId}`` describes; a ValidationError (400) names the bad field.

    Target URLs must satisfy ``policy`` (the stack's outbound URL policy; a deployed stack's by default).
    """
    try:
        validate_id(rule_id, "ruleId")
    except ValueError as exc:
        raise ValidationError(str(exc), field="ruleId") from exc
    if not isinstance(body, dict):
        raise ValidationError("the body must be a JSON object describing the rule", field="body")
    if "ruleId" in body and body["ruleId"] != rule_id:
        raise ValidationError(
            f"ruleId in the body ({body['ruleId']!r}) differs from the path ({rule_id!r})", field="ruleId"
        )
    try:
        return Rule.model_validate({**body, "ruleId": rule_id}, context=write_context(policy))
    except PydanticValidationError as exc:
        message, field = describe_rule_error(exc)
        raise ValidationError(message, field=field) from exc


def _alias_members(where: str, member: dict[str, Any], aliases: AliasStore, read: dict[str, Any]) -> list[Any]:
    """The members a member naming an alias stands for: itself when it names one of the alias's assets too, else
    one per asset of the alias. ``read``: the aliases read so far, each read once per body."""
    name = member["alias"]
    if not isinstance(name, str) or not ALIAS_NAME.fullmatch(name):
        raise ValidationError(f"{where}: an alias name is 1 to 128 letters, digits, '_', '.' or '-'", where)
    if name not in read:
        read[name] = aliases.get_alias(name)
    alias = read[name]
    if alias is None:
        raise ValidationError(
            f"{where}: alias {name!r} does not exist; create it first (PUT /aliases/{name})", field=where
        )
    if "assetKey" in member:
        if member["assetKey"] not in alias.asset_keys:
            raise ValidationError(
                f"{where}: {member['assetKey']!r} is not an asset of alias {name!r} "
                f"({', '.join(alias.asset_keys)}); name the alias alone to wait for its assets",
                field=where,
            )
        return [member]
    return [{**member, "assetKey": key} for key in alias.asset_keys]


def resolve_member_aliases(body: Any, aliases: AliasStore) -> Any:
    """The rule body with each member that names an alias (``{"alias": name}``, no ``assetKey``) replaced by one
    member per asset of the alias, each keeping the member's condition and the alias's name (DESIGN.md: "each
    member an asset key or alias"). Resolved here, when the rule is written: the stored rule names the assets
    it waits for, so the resolver wakes it and evaluates it on their state. A member naming both must name one
    of the alias's assets (the form ``GET /rules/{ruleId}`` answers). An alias that does not exist, or an asset
    that is not one of it, is a ValidationError naming the member's ``alias``; bodies of any other shape pass
    unchanged, for the rule's own validation to name what is wrong."""
    if not isinstance(body, dict) or not isinstance(body.get("groups"), list):
        return body
    read: dict[str, Any] = {}
    groups: list[Any] = []
    for g, group in enumerate(body["groups"]):
        if not isinstance(group, dict) or not isinstance(group.get("members"), list):
            groups.append(group)
            continue
        members: list[Any] = []
        for m, member in enumerate(group["members"]):
            if not isinstance(member, dict) or "alias" not in member:
                members.append(member)
                continue
            members.extend(_alias_members(f"groups.{g}.members.{m}.alias", member, aliases, read))
        groups.append({**group, "members": members})
    return {**body, "groups": groups}


def refuse_producer_secrets(rule: Rule, producer_secrets: ProducerSecrets, names: SecretNames = AS_GIVEN) -> None:
    """No secret a rule's target names may be a producer's signing secret, however spelled: the target's
    host would receive it. A ValidationError naming the field, e.g. ``target.tokenRef``."""
    if isinstance(rule.target, UnusableTarget):
        return
    for field, ref in secret_refs(rule.target).items():
        where = f"target.{field}"
        try:
            reached = producer_secrets.reached_by(ref, names)
        except SecretNameError as exc:
            raise ValidationError(f"{where}: {exc}", field=where) from exc
        if reached:
            raise ValidationError(f"{where}: {producer_secrets.refusal(ref)}", field=where)


def check_target_secrets(rule: Rule, secrets: SecretStore, names: SecretNames = AS_GIVEN) -> None:
    """Every secret the rule's target names must exist under the name the dispatcher will look up (``names``:
    the stack's one naming rule, so it lies under the prefix the dispatcher may read); else a ValidationError
    naming the field, e.g. ``target.secretRef``, the name looked up and the rule."""
    if isinstance(rule.target, UnusableTarget):
        return
    for field, ref in secret_refs(rule.target).items():
        where = f"target.{field}"
        try:
            name = names.resolve(ref)
        except SecretNameError as exc:
            raise ValidationError(f"{where}: {exc}", field=where) from exc
        try:
            found = secrets.secret_exists(name)
        except AuthorizationError as exc:
            raise ValidationError(f"{where}: {exc}", field=where) from exc
        if not found:
            raise ValidationError(f"{where}: {names.missing(ref)} (see docs/rules.md#secrets)", field=where)
