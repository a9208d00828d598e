"""A group's ``require``: a boolean tree over its members (``allOf``, ``anyOf``, ``atLeast`` n ``of``), so one group
says ``(a & b) | (c & d & e)`` or "any 2 of these 3" instead of AND over every member.

The members stay a flat list (pins, cursors and triggers keyed per member as without ``require``); the tree names
them by reference: a member's ``name``, its ``alias`` (every member the alias became, all of them) or its
``assetKey``. :func:`judge` evaluates the tree from the set of members that hold and answers the verdict at every
node, which explain shows; the group's claim pins the members that hold (one that does not hold pins nothing).
Pure: the shape is checked here (depth, n in 1..m), the references against the group in
:mod:`lakehook.domain.rules`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

MAX_REQUIRE_DEPTH = 4  # nested operators: {"anyOf": [{"allOf": [...]}]} is depth 2
MAX_REQUIRE_TERMS = 48  # terms of one operator (a group has at most 48 members)
REF_PATTERN = r"^[A-Za-z0-9_.:/=\-]{1,512}$"


def _term_kind(value: Any) -> str:
    """The tag of a term: a reference (a string) or the operator its object names (allOf when it names none, so
    the error names the missing operator)."""
    if isinstance(value, str):
        return "ref"
    if isinstance(value, BaseModel):
        return type(value).__name__
    if isinstance(value, dict):
        if "anyOf" in value or "any_of" in value:
            return "AnyOf"
        if "atLeast" in value or "at_least" in value or "of" in value:
            return "AtLeast"
    return "AllOf"


class AllOf(BaseModel):
    """Every term holds."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    all_of: list[Term] = Field(alias="allOf", min_length=1, max_length=MAX_REQUIRE_TERMS)

    @property
    def terms(self) -> list[Term]:
        return self.all_of

    def needed(self) -> int:
        return len(self.all_of)


class AnyOf(BaseModel):
    """At least one term holds."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    any_of: list[Term] = Field(alias="anyOf", min_length=1, max_length=MAX_REQUIRE_TERMS)

    @property
    def terms(self) -> list[Term]:
        return self.any_of

    def needed(self) -> int:
        return 1


class AtLeast(BaseModel):
    """At least ``atLeast`` of the terms in ``of`` hold (N of M, 1 <= N <= M)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    at_least: int = Field(alias="atLeast", ge=1, le=MAX_REQUIRE_TERMS)
    of: list[Term] = Field(min_length=1, max_length=MAX_REQUIRE_TERMS)

    @model_validator(mode="after")
    def _n_of_m(self) -> AtLeast:
        if self.at_least > len(self.of):
            raise ValueError(f"atLeast is {self.at_least} but of names {len(self.of)} terms; N of M needs 1 <= N <= M")
        return self

    @property
    def terms(self) -> list[Term]:
        return self.of

    def needed(self) -> int:
        return self.at_least


Operator = AllOf | AnyOf | AtLeast
Term = Annotated[
    Annotated[str, Tag("ref"), Field(pattern=REF_PATTERN)]
    | Annotated[AllOf, Tag("AllOf")]
    | Annotated[AnyOf, Tag("AnyOf")]
    | Annotated[AtLeast, Tag("AtLeast")],
    Discriminator(_term_kind),
]
Require = Annotated[
    Annotated[AllOf, Tag("AllOf")] | Annotated[AnyOf, Tag("AnyOf")] | Annotated[AtLeast, Tag("AtLeast")],
    Discriminator(_term_kind),
]
for _model in (AllOf, AnyOf, AtLeast):
    _model.model_rebuild()

_NAMES = {AllOf: "allOf", AnyOf: "anyOf", AtLeast: "atLeast"}


def depth(term: Term) -> int:
    """How many operators deep the term nests (a reference: 0)."""
    if isinstance(term, str):
        return 0
    return 1 + max(depth(t) for t in term.terms)


def references(term: Term) -> list[str]:
    """Every reference the term makes, in order (repeats kept)."""
    if isinstance(term, str):
        return [term]
    return [ref for t in term.terms for ref in references(t)]


@dataclass(frozen=True)
class NodeVerdict:
    """The verdict of one node of a ``require`` tree: a reference (its members) or an operator (its terms)."""

    holds: bool
    ref: str | None = None
    members: tuple[str, ...] = ()  # a reference: the asset keys it names
    op: str | None = None
    needed: int = 0  # an operator: how many of its terms must hold
    terms: tuple[NodeVerdict, ...] = ()

    @property
    def holding(self) -> int:
        return sum(t.holds for t in self.terms)

    def describe(self) -> str:
        """A line a person reads: ``anyOf(allOf(a ✓, b ✗) ✗, atLeast 2 of (c ✓, d ✗, e ✗) ✗) ✗``."""
        mark = "holds" if self.holds else "does not hold"
        if self.ref is not None:
            return f"{self.ref} ({mark})"
        inner = ", ".join(t.describe() for t in self.terms)
        head = f"atLeast {self.needed} of" if self.op == "atLeast" else self.op
        return f"{head} [{inner}]: {self.holding} of {len(self.terms)} hold ({mark})"


def judge(term: Term, members_of: Mapping[str, tuple[str, ...]], holds: Callable[[str], bool]) -> NodeVerdict:
    """The tree's verdict at every node: a reference holds when every member it names (``members_of``: reference ->
    asset keys) holds; an operator when at least ``needed`` of its terms hold."""
    if isinstance(term, str):
        keys = members_of[term]
        return NodeVerdict(holds=all(holds(k) for k in keys), ref=term, members=keys)
    terms = tuple(judge(t, members_of, holds) for t in term.terms)
    needed = term.needed()
    return NodeVerdict(holds=sum(t.holds for t in terms) >= needed, op=_NAMES[type(term)], needed=needed, terms=terms)
