"""Query strings: a parameter a route does not take is a 400 naming it, never silently ignored."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from lakehook.domain.errors import ValidationError


def refuse_unknown_query(event: Any, allowed: Collection[str]) -> None:
    """Raise a ValidationError naming the first (by name) query parameter of ``event`` not in ``allowed``."""
    given = event.multi_value_query_string_parameters or event.query_string_parameters or {}
    unknown = sorted(name for name in given if name not in allowed)
    if unknown:
        raise ValidationError(
            f"unknown query parameter {unknown[0]!r}; this route takes {', '.join(sorted(allowed))}",
            field=unknown[0],
        )
