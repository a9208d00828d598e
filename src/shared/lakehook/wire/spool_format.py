"""The spool manifest's wire format, standard library only, shared by lakehook and the writer helper.

The manifest's own checksum (its ``sha256`` member) is defined as:

1. take the manifest as the JSON object it is (as parsed, values untouched) and remove its
   top-level ``sha256`` member;
2. serialize it canonically: object keys sorted by code point at every level, no whitespace
   (separators ``,`` and ``:``), strings JSON-escaped with every non-ASCII character as
   ``\\uXXXX`` (Python: ``json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True)``);
   a manifest holds no floating-point numbers, so numbers are plain decimal integers;
3. SHA-256 of those (ASCII) bytes, as 64 lowercase hex digits.

Writers in any language can reproduce it; lakehook recomputes it before trusting anything else.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

FORMAT_VERSION = 1
CHECKSUM_FIELD = "sha256"
MANIFEST_SUFFIX = ".manifest.json"  # manifests are recognised by this suffix (and the notification's prefix)
SEALED = "SEALED"
INTERRUPTED = "INTERRUPTED"


def canonical_json(doc: Any) -> bytes:
    """The canonical bytes of a JSON value (see the module docstring); floats are refused."""
    _refuse_floats(doc)
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def manifest_checksum(manifest: dict[str, Any]) -> str:
    """The SHA-256 a manifest must carry in ``sha256``: over its canonical JSON without that member."""
    body = {k: v for k, v in manifest.items() if k != CHECKSUM_FIELD}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> ``(bucket, key)``; raises ValueError for anything else."""
    if not isinstance(uri, str) or not uri.startswith("s3://"):
        raise ValueError(f"not an s3:// URI: {uri!r}")
    bucket, _, key = uri[5:].partition("/")
    if not bucket or not key:
        raise ValueError(f"an s3:// URI needs a bucket and a key: {uri!r}")
    return bucket, key


def s3_uri(bucket: str, key: str) -> str:
    return f"s3://{bucket}/{key}"


def _refuse_floats(value: Any) -> None:
    if isinstance(value, float):
        raise ValueError("a spool manifest holds no floating-point numbers")
    if isinstance(value, dict):
        for item in value.values():
            _refuse_floats(item)
    elif isinstance(value, list):
        for item in value:
            _refuse_floats(item)
