"""One page of an in-memory listing, refusing a token of another listing as the DynamoDB adapters do."""

from __future__ import annotations

from typing import Any

from lakehook.domain.errors import ValidationError
from lakehook.ports.store import Page


def page_of(items: list[Any], limit: int, next_token: str | None, listing: str = "") -> Page[Any]:
    """One page of ``items``; the token names its ``listing`` (an asset's events, a rule's triggers), so a token of
    another listing is refused as the DynamoDB adapters refuse it (their start key names the partition)."""
    if not next_token:
        start = 0
    else:
        scope, _, offset = next_token.rpartition("~")
        if not (offset.isascii() and offset.isdigit()):  # as the DynamoDB adapter: a foreign token is a 400
            raise ValidationError("nextToken is not a token this API issued", field="nextToken")
        if scope != listing:
            raise ValidationError("nextToken belongs to another listing", field="nextToken")
        start = int(offset)
    end = start + limit
    return Page(items[start:end], f"{listing}~{end}" if end < len(items) else None)
