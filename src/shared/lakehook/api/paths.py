"""Path parameters, typed with the patterns the domain checks, so the OpenAPI document states them and a
malformed one is a 400 naming it before any route runs (a generated client or fuzzer sees the same rule)."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header, Path

from lakehook.domain.ids import ALIAS_NAME_PATTERN, PRODUCER_ID_PATTERN, RULE_ID_PATTERN
from lakehook.domain.requests import IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_PATTERN, IDEMPOTENCY_KEY_RULE

# <ruleId>.<groupId>[.<marker>].<hash>: ids of at most 64 characters, a marker such as manual-12, 24 hex digits.
TRIGGER_KEY_PATTERN = r"^[A-Za-z0-9_.-]{1,200}$"

RuleId = Annotated[str, Path(pattern=RULE_ID_PATTERN, description="letters, digits, _ . - (1 to 64)")]
ProducerId = Annotated[str, Path(pattern=PRODUCER_ID_PATTERN, description="letters, digits, _ . - (1 to 128)")]
AliasName = Annotated[str, Path(pattern=ALIAS_NAME_PATTERN, description="letters, digits, _ . - (1 to 128)")]
TriggerKey = Annotated[
    str, Path(pattern=TRIGGER_KEY_PATTERN, description="<ruleId>.<groupId>[.<marker>].<hash>, as lakehook made it")
]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias=IDEMPOTENCY_KEY_HEADER,
        # stated in the document; checked by the domain (RequestKey.of), whose 400 names the header
        json_schema_extra={"pattern": IDEMPOTENCY_KEY_PATTERN},
        description=f"{IDEMPOTENCY_KEY_RULE}: the same request repeated with it answers its first answer again "
        "(Idempotent-Replayed: true) and starts nothing; another request under it is a 409 IDEMPOTENCY_KEY_REUSED. "
        "Kept 7 days.",
    ),
]
