"""What every answer model shares (see ``api.answers``): the base class, ISO instants, paging, windows."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

Iso = str  # an ISO 8601 instant in UTC, e.g. 2025-06-01T10:05:00Z
NextToken = Field(default=None, alias="nextToken", description="pass back as ?nextToken= for the next page")


# Answers only describe bodies for the OpenAPI document (routes answer with to_api()): their schemas are built
# when the document is, not when a function imports the routes.
class Answer(BaseModel):
    model_config = ConfigDict(populate_by_name=True, defer_build=True)


class Window(Answer):
    """``[start, end)``."""

    start: Iso
    end: Iso
