"""What the CLI reads from files, stdin and its arguments: bounded, decoded and parsed, each failure one
CliError naming the input and what is wrong with it (never a traceback).

- Size: at most :data:`MAX_INPUT_BYTES` is read (API Gateway takes at most 10 MB per request anyway), so
  ``-f /dev/zero`` or a stray log file ends in a sentence, not in memory exhaustion.
- Text: UTF-8; a directory, a missing or unreadable file, and bytes that are not UTF-8 are named as such.
- JSON: the API's own bounded parser (:func:`lakehook.domain.json_input.parse_json`): nesting, number
  lengths, duplicate keys, NaN.
- YAML: safe loading, nesting bounded while it is composed (PyYAML recurses per level), at most
  :data:`MAX_YAML_ALIAS_VALUES` values added by aliases (a few lines of anchors can stand for billions: they
  are refused from the document as written, each anchored value sized once, before anything walks the
  expansion), at most :data:`MAX_YAML_VALUES` values in all,
  and only what JSON can carry (an unquoted ``2025-06-01`` is a date, which the API cannot take).
"""

from __future__ import annotations

import math
import sys
from typing import Any

import yaml

from lakehook.cli_commands.api import CliError
from lakehook.domain.errors import ValidationError
from lakehook.domain.json_input import parse_json
from lakehook.domain.limits import MAX_JSON_DEPTH

MAX_INPUT_BYTES = 10 * 1024 * 1024
MAX_YAML_DEPTH = MAX_JSON_DEPTH  # what the API accepts in a body
MAX_YAML_VALUES = 1_000_000
MAX_YAML_ALIAS_VALUES = 100_000  # values aliases may add to what is written (an anchor reused is fine; a bomb not)


def read_text(path: str, what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of the file at ``path`` (``-``: stdin), at most ``limit`` bytes."""
    where = "stdin" if path == "-" else path
    try:
        if path == "-":
            stream = getattr(sys.stdin, "buffer", None)
            data = stream.read(limit + 1) if stream is not None else sys.stdin.read(limit + 1).encode()
        else:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
    except IsADirectoryError as exc:
        raise CliError(f"cannot read {what} {where}: it is a directory; name a file") from exc
    except UnicodeDecodeError as exc:  # a text stdin decoding what it reads
        raise CliError(f"{what} on {where} is not UTF-8 text (byte {exc.start} is invalid)") from exc
    except OSError as exc:
        raise CliError(f"cannot read {what} {where}: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise CliError(f"{what} {where} is larger than {limit} bytes, the limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"{what} {where} is not UTF-8 text (byte {exc.start} is invalid)") from exc


def json_value(text: str, what: str) -> Any:
    """JSON text parsed within the API's limits; a CliError naming ``what`` otherwise."""
    try:
        return parse_json(text, subject=what)
    except ValidationError as exc:
        raise CliError(str(exc)) from exc


class _DepthError(yaml.YAMLError):
    """The document nests deeper than MAX_YAML_DEPTH."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses deep nesting while composing, before Python's recursion limit is near."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH + 1:  # the scalar at the bottom is a node too
                raise _DepthError(f"it nests deeper than {MAX_YAML_DEPTH} levels, the limit")
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def yaml_document(text: str, what: str) -> Any:
    """The YAML (or JSON) document in ``text``, as JSON values; a CliError naming ``what`` otherwise."""
    loader: _BoundedLoader | None = None
    try:
        loader = _BoundedLoader(text)  # its reader refuses control characters at once
        document = loader.get_single_data()
    except _DepthError as exc:
        raise CliError(f"{what} is refused: {exc}") from exc
    except yaml.YAMLError as exc:
        raise CliError(f"{what} is not valid YAML: {exc}") from exc
    except (ValueError, TypeError, RecursionError) as exc:  # a constructor's: e.g. an int of 5000 digits
        raise CliError(f"{what} is not valid YAML: {type(exc).__name__}: {exc}") from exc
    finally:
        if loader is not None:
            loader.dispose()
    _check_alias_expansion(document, what)
    _check_json_values(document, what)
    return document


def _check_alias_expansion(document: Any, what: str) -> None:
    """Refuse a document whose aliases add more than MAX_YAML_ALIAS_VALUES values, or that contains itself.

    An alias is the anchored object itself (the safe loader builds each node once), so every distinct list and
    mapping is sized once, from its children's sizes: linear in the document as written, however far it would
    expand. Without recursion: each container is visited, then closed once its children are sized."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()  # the containers on the path from the document down to the one being visited
    written = 1
    stack: list[tuple[Any, bool]] = [(document, False)]
    while stack:
        value, closing = stack.pop()
        if not isinstance(value, dict | list) or (not closing and id(value) in sizes):
            continue
        children = list(value.values() if isinstance(value, dict) else value)
        if closing:
            sizes[id(value)] = 1 + sum(sizes.get(id(child), 1) for child in children)
            open_.discard(id(value))
            continue
        if id(value) in open_:
            raise CliError(f"{what} is refused: a YAML alias refers to a value that contains it (endless)")
        open_.add(id(value))
        written += len(children)
        stack.append((value, True))
        stack.extend((child, False) for child in children)
    added = sizes.get(id(document), 1) - written
    if added > MAX_YAML_ALIAS_VALUES:
        raise CliError(
            f"{what} is refused: its YAML aliases expand it by {added} values, more than {MAX_YAML_ALIAS_VALUES} "
            f"(an alias bomb?); write the values out or reuse fewer anchors"
        )


def _check_json_values(document: Any, what: str) -> None:
    """Only what JSON carries (string keys; no dates, sets, bytes, NaN), at most MAX_YAML_VALUES of them and
    MAX_YAML_DEPTH levels deep, counted as the API would receive them (aliases expanded). Without recursion."""
    seen = 0
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    while stack:
        value, path, depth = stack.pop()
        seen += 1
        if seen > MAX_YAML_VALUES:
            raise CliError(f"{what} is refused: it expands to more than {MAX_YAML_VALUES} values (YAML aliases?)")
        where = path or "the document"
        if isinstance(value, dict | list) and depth >= MAX_YAML_DEPTH:
            raise CliError(f"{what} is refused: {where} nests deeper than {MAX_YAML_DEPTH} levels, the limit")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise CliError(f"{what}: {where} has the key {key!r:.60}, not a string; quote it")
                stack.append((item, f"{path}.{key}" if path else key, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, f"{path}.{i}" if path else str(i), depth + 1) for i, item in enumerate(value))
        else:
            _check_json_scalar(value, what, where)


def _check_json_scalar(value: Any, what: str, where: str) -> None:
    """A value that is neither object nor list: null, a string, a number JSON carries (no NaN or infinity), or a
    boolean."""
    if isinstance(value, float) and not math.isfinite(value):
        raise CliError(f"{what}: {where} is {value}, which JSON cannot carry")
    if value is not None and not isinstance(value, str | int | float | bool):
        raise CliError(
            f"{what}: {where} is a YAML {type(value).__name__} ({value!r:.60}), which JSON cannot carry; "
            "quote it to make it a string"
        )
