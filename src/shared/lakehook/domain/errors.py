"""Domain errors: one class per condition, each mapped to an answer at the edges."""


class LakehookError(Exception):
    """Base class of every error lakehook raises on purpose."""


class ValidationError(LakehookError):
    """Input is malformed; the message names the field."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFoundError(LakehookError):
    """The thing asked for does not exist."""


class ConflictError(LakehookError):
    """A conditional write lost against the current state."""


class AuthenticationError(LakehookError):
    """The caller could not be authenticated (bad or missing signature or token)."""


class AuthorizationError(LakehookError):
    """The caller is authenticated but may not do this."""


class PayloadTooLargeError(LakehookError):
    """The request body is larger than allowed."""


class UnsupportedMediaTypeError(LakehookError):
    """The request body is not of a media type the API reads (JSON)."""


class UnreadableItemError(ValueError):
    """A stored item does not parse (corrupted, or written by an incompatible version): the rules that need it
    fail with this as their ``lastError``; everything else goes on."""
