"""What ``lakehook apply`` reports per object of the file (docs/cli.md): created, updated or unchanged, and what
changed; the answer the CLI emits as JSON and prints as text."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import Field

from lakehook.answers.base import Answer, present

if TYPE_CHECKING:
    from lakehook.cli_commands.apply import Change

SINGULAR = {"producers": "producer", "assets": "asset", "aliases": "alias", "rules": "rule"}


class ChangeAnswer(Answer):
    kind: str = Field(description="producer, asset, alias or rule")
    id: str
    action: str = Field(description="create, update or unchanged")
    applied: bool | None = Field(default=None, description="absent in a dry run; unchanged objects count as applied")
    changed: list[str] | None = Field(default=None, description="the fields an update changes")
    secret: str | None = Field(default=None, description="a created producer's signing secret (shown once)")
    would_start: list[dict[str, Any]] | None = Field(
        default=None, alias="wouldStart", description="a rule's dry run: the runs writing it would start now"
    )

    @classmethod
    def from_domain(cls, change: Change, applied: bool | None = None) -> ChangeAnswer:
        """``applied``: None in a dry run (which says instead what a rule would start), else whether it was written."""
        return cls(
            kind=SINGULAR[change.kind],
            id=change.id,
            action=change.action,
            **present(
                applied=None if applied is None else applied or change.action == "unchanged",
                changed=change.changed or None,
                secret=change.secret,
                would_start=change.would_start if applied is None else None,
            ),
        )
