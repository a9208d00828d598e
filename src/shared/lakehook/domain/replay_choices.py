"""A replay's choices: where the rerun starts (``startFrom``) and the variables it overrides (``variables``).

The body of ``POST /triggers/{triggerKey}/replay`` is optional; when sent it is exactly these two fields, each
optional. Anything else is a 400 naming the field, never silently ignored. The choices are validated here, when
the replay is claimed, and stored with the replay's claim, so every attempt of its dispatch sends the same ones.
How each target receives them is in docs/targets.md ("Replay choices").
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr, field_validator
from pydantic import ValidationError as PydanticValidationError

from lakehook.domain.errors import ValidationError

MAX_VARIABLES = 50
MAX_VARIABLE_NAME = 128
MAX_VARIABLES_BYTES = 4 * 1024  # the variables as compact JSON
MAX_START_FROM = 256
RESERVED_PREFIX = "lakehook_"  # DolphinScheduler's start parameters lakehook sets itself
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
FIELDS = ("startFrom", "variables")

Scalar = StrictStr | StrictBool | StrictInt | StrictFloat | None
StartFrom = Annotated[StrictStr, Field(min_length=1, max_length=MAX_START_FROM)]


def variables_json(variables: dict[str, Any]) -> str:
    """The variables as compact, key-sorted JSON: what is measured against the limit and what is stored."""
    return json.dumps(variables, separators=(",", ":"), sort_keys=True, ensure_ascii=False, allow_nan=False)


class ReplayChoices(BaseModel):
    """What a replay may choose; empty for a plain replay."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    start_from: StartFrom | None = Field(
        default=None,
        alias="startFrom",
        description="the task or step the rerun starts at (1..256 characters); each target's meaning is in "
        "docs/targets.md",
    )
    variables: dict[StrictStr, Scalar] | None = Field(
        default=None,
        max_length=MAX_VARIABLES,
        description=f"variables the rerun overrides: at most {MAX_VARIABLES} names ({VARIABLE_NAME.pattern}, 1.."
        f"{MAX_VARIABLE_NAME} characters, not starting with {RESERVED_PREFIX}) to JSON scalars, at most "
        f"{MAX_VARIABLES_BYTES} bytes as compact JSON",
    )

    @field_validator("start_from")
    @classmethod
    def _visible(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or any(ord(c) < 32 for c in value)):
            raise ValueError("must name a task or step: not blank, no control characters")
        return value

    @field_validator("variables")
    @classmethod
    def _bounded(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        for name in value:
            _check_name(name)
        try:
            size = len(variables_json(value).encode())
        except ValueError as exc:  # NaN or an infinity: not JSON
            raise ValueError(f"values must be JSON: {exc}") from None
        if size > MAX_VARIABLES_BYTES:
            raise ValueError(f"are {size} bytes as JSON; at most {MAX_VARIABLES_BYTES}")
        return value

    @property
    def empty(self) -> bool:
        return self.start_from is None and self.variables is None


def _check_name(name: str) -> None:
    if not 1 <= len(name) <= MAX_VARIABLE_NAME:
        raise ValueError(f"name {name[:40]!r} must be 1..{MAX_VARIABLE_NAME} characters")
    if VARIABLE_NAME.fullmatch(name) is None:
        raise ValueError(f"name {name!r} must match {VARIABLE_NAME.pattern}")
    if name.startswith(RESERVED_PREFIX):
        raise ValueError(f"name {name!r} starts with {RESERVED_PREFIX}, which lakehook's own parameters use")


def parse_replay_choices(body: Any) -> ReplayChoices:
    """The choices a replay request's body makes (None: no body, a plain replay). A ValidationError (400)
    names the field: an unknown one, or a bad ``startFrom`` or ``variables``."""
    if body is None:
        return ReplayChoices()
    if not isinstance(body, dict):
        raise ValidationError('the body must be a JSON object such as {"startFrom": "load"}', field="body")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        names = ", ".join(repr(u) for u in unknown)
        raise ValidationError(f"unknown field {names}; a replay takes startFrom and variables", field=unknown[0])
    try:
        return ReplayChoices.model_validate(body)
    except PydanticValidationError as exc:
        raise ValidationError(*_described(exc)) from exc


def _described(exc: PydanticValidationError) -> tuple[str, str]:
    """The first error's message and field (``variables`` or ``startFrom``)."""
    error = exc.errors()[0]
    loc = [str(p) for p in error["loc"]]
    where = loc[0] if loc else "body"
    if where == "variables" and len(loc) > 1:  # a value that is not a scalar (pydantic names each union arm)
        return f"variables.{loc[1]}: must be a JSON scalar (a string, number, boolean or null)", where
    return f"{where}: {error['msg'].removeprefix('Value error, ')}", where


TASK_CODE = re.compile(r"[1-9][0-9]{0,18}")  # DolphinScheduler's task codes are positive longs


def check_for_target(choices: ReplayChoices, target_type: str) -> None:
    """Refuse (ValidationError, a 400 naming ``startFrom``) a choice the rule's target cannot honour: on
    DolphinScheduler ``startFrom`` is the start node, which its API takes as a task code."""
    start = choices.start_from
    if target_type == "dolphinscheduler" and start is not None and TASK_CODE.fullmatch(start) is None:
        raise ValidationError(
            f"startFrom: {start!r} is not a DolphinScheduler task code; the rule's target starts "
            "a workflow at a task named by its code (a number, as the task's definition shows it)",
            field="startFrom",
        )
