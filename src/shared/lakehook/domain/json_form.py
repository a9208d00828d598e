"""A domain model's JSON form, the one way every caller takes it (the domain knows no answer shape, and a model
has no ``to_api`` of its own).

For a model whose stored, sent or answered form is simply its fields: camelCase names, JSON values, nothing
that is None. A shape of its own (an answer, a store's item) is built outside the domain: ``lakehook.answers``
and the adapters.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


def json_form(model: BaseModel) -> dict[str, Any]:
    """``model`` as JSON: fields by their aliases, in declaration order, those that are None left out."""
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)
