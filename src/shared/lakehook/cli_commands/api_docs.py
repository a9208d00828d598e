"""``docs/api.md`` from the OpenAPI document: ``python -m lakehook.cli_commands.api_docs`` (``--check`` to verify only).

The Markdown is a function of the document alone (no clock, no environment), so a test can tell
when the committed page no longer matches the routes.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DOCS_PATH = Path(__file__).resolve().parents[4] / "docs" / "api.md"
REGENERATE = "python -m lakehook.cli_commands.api_docs"
_METHODS = ("get", "put", "post", "patch", "delete")
# Powertools' own validation models: the API answers 400 with the Error schema instead.
_INTERNAL_SCHEMAS = frozenset({"HTTPValidationError", "ValidationError", "ResponseValidationError"})

INTRO = """\
Every route answers JSON. Errors are `{"error": "<CODE>", "message": "…", "field": "…"}` with
400 (bad input, the message names the field), 401 (no or bad credentials), 403 (a producer writing
outside its prefixes), 404, 409, 413 and 415 (a body that is not JSON).

**Authentication.** Credentials are checked first, before the body is read: a request without valid
credentials is a 401 whatever its body. `POST /asset-events` accepts an HMAC-signed request from a
registered producer: `X-Lakehook-Producer: <producerId>` and
`X-Lakehook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, valid for
5 minutes. `POST /api/v1/lineage` accepts the same signed request from any producer, and
`Authorization: Bearer <producerId>:<secret>` (OpenLineage's `api_key` auth, no replay window) only from a
producer registered with `lineageBearer: true`; see [lineage.md](lineage.md).
`POST /runs/{triggerKey}/complete` takes management credentials or
`X-Lakehook-Completion-Token: <completionToken>`, the token the trigger's invocation carried (an HMAC of
the trigger key under the stack's completion key; it completes that trigger only), checked before the body
is read; a producer signature does not complete runs. `GET` and `PUT /watermarks` also take a producer's
signature, for the namespaces in its `watermarkNamespaces` (403 for any other; see [sensors.md](sensors.md)).
Management routes take IAM (SigV4 for the
`execute-api` service) on AWS, and
`Authorization: Bearer <admin token>` on the local stack (`lakehook local up --admin-token …`).
On AWS these routes have no IAM authorizer (API Gateway would refuse the producers' and runs' own
credentials), so API Gateway never passes them an IAM identity: with SigV4, send them to their IAM variant
under `/iam` (`POST /iam/asset-events`, `POST /iam/api/v1/lineage`, `POST /iam/runs/{triggerKey}/complete`,
`GET`/`PUT /iam/watermarks`), which takes the same request and answers the same.
The `lakehook` CLI does either for you (see [local.md](local.md) and [operations.md](operations.md)).

**Targets.** A rule's `target` (the `WebhookTarget` … `DolphinSchedulerTarget` schemas below) starts its
runs; what a run receives (the invocation payload: trigger key, pinned inputs, manifest URI, completion
token), how each target deduplicates, which answers are retried, the webhook receiver's contract and how a
run reports its end are in [targets.md](targets.md).

Instants: `commitTime` and `watermark` are epoch milliseconds; interval bounds and timestamps in
answers are ISO 8601 in UTC (epoch milliseconds are accepted on input). The live document is
`GET /openapi.json`.
"""


def limits_section() -> str:
    """The "Limits and input rules" section, from the constants the code enforces (no environment)."""
    from lakehook.domain.limits import (
        MAX_DATASET_FACETS,
        MAX_JSON_DEPTH,
        MAX_NUMBER_DIGITS,
        MAX_PAYLOAD_BYTES,
        MAX_PAYLOAD_DEPTH,
        MAX_SYMLINKS,
    )
    from lakehook.domain.lineage import MAX_OUTPUTS
    from lakehook.domain.time import MAX_ISO_MS
    from lakehook.domain.watermarks import MAX_VALUE_BYTES
    from lakehook.settings import Settings

    def default(name: str) -> Any:
        return Settings.model_fields[name].default

    long_range = "0 … 2^63-1"
    signed_range = "-2^63 … 2^63-1"
    ids = "`snapshotId`, `parentSnapshotId`, `sequenceNumber`, `schemaId`, `totalRecordCount`, `changelogRecordCount`"
    instants = f"0 … {MAX_ISO_MS} epoch ms (1970-01-01T00:00:00Z … 9999-12-31T23:59:59.999Z)"
    return f"""\
## Limits and input rules

Every body goes through one bounded parser before any route or model sees it; the limits and ranges
below are declared once in the code (`lakehook.domain.limits`, the models' field constraints) and this
section is generated from them.

| limit | value | beyond it |
|---|---|---|
| request body | {default("max_body_bytes")} bytes | 413 |
| events per push | {default("max_events_per_push")} | 400 naming `events` |
| nesting of arrays/objects in a body | {MAX_JSON_DEPTH} levels | 400 naming the limit, nothing written |
| digits in one number | {MAX_NUMBER_DIGITS} (DynamoDB's precision) | 400 naming the limit, nothing written |
| event `payload` | {MAX_PAYLOAD_BYTES} bytes as JSON, {MAX_PAYLOAD_DEPTH} levels | that event REJECTED (`payload`) |
| a watermark store `value` | {MAX_VALUE_BYTES} bytes as compact JSON | 400 naming `value` |
| lineage: outputs of one RunEvent | {MAX_OUTPUTS} | 400 naming `outputs` |
| lineage: facets and output facets of one output dataset | {MAX_DATASET_FACETS} | 400 naming `MAX_DATASET_FACETS` |
| lineage: `symlinks` identifiers of one output dataset | {MAX_SYMLINKS} | 400 naming `MAX_SYMLINKS` |

| numeric field | range |
|---|---|
| {ids} | {long_range} |
| `commitIdentifier`, `deltaRecordCount` (added minus deleted rows) | {signed_range} |
| `commitTime`, `watermark`, `interval.start`, `interval.end` | {instants} |
| coverage `start`, `end` (query) | the same instants |
| watermark store `expectedVersion` | {long_range} |

- **Order of checks.** Credentials (401) → body size (413) → `Content-Type`, when given, must be JSON
  (415) → UTF-8, JSON syntax and the limits above (400, `field: body`) → the route's fields (400 naming
  the field, or per event in a push).
- **Encoding.** A body must be UTF-8; other bytes, and `\\ud800`-style escapes of unpaired surrogates,
  are a 400.
- **Duplicate keys** in any object are a 400 naming the key: a body means one thing.
- **NaN and Infinity** are not JSON: a 400. So is a number too large for a float (`1e400`).
- **Numbers are not coerced.** An integer field takes a JSON integer: `"6"`, `6.0`, `1e3` and `true`
  are refused naming the field (a float cannot carry every 64-bit id: above 2^53 digits are already lost).
  An instant in a body is an integer of epoch milliseconds or an ISO 8601 string with a zone; digits in
  a string (`"1725963330123"`) are refused there, and accepted in query parameters, which are text.
- **Batches.** A push is parsed whole first (a body over the limits is a 400 and nothing is written); then
  every event is validated before any is written: an invalid event is answered REJECTED naming its field
  and the others are recorded; an event outside the producer's prefixes refuses the whole push (403).
- **Signatures.** An unknown producer, a producer without a secret and a signature by another secret all
  answer the same 401 text. A warm function keeps a producer's registration it read (a consistent read)
  for {default("producer_registration_seconds"):g} s (`LAKEHOOK_PRODUCER_REGISTRATION_SECONDS`; 0 reads it on
  every request): a push within that time reads nothing, and a rotation's end of the old secret
  (`PUT /producers/{{id}}?rotateSecret=true`) or a prefix change applies within that bound in every other
  warm function (at once in the one that wrote it). A signature the kept registration does not verify reads
  the producer again before it is refused, so a rotated secret's new value is accepted at once. The secret
  is cached per process, keyed by the producer's `secretVersion`. A secret edited in Secrets Manager
  directly, outside lakehook, applies within {default("producer_cache_seconds"):g} s
  (`LAKEHOOK_PRODUCER_CACHE_SECONDS`).
"""


def load_spec() -> dict[str, Any]:
    """The document the API serves at ``GET /openapi.json``."""
    from lakehook.api.app import build_app, openapi_document

    spec: dict[str, Any] = json.loads(openapi_document(build_app()))
    return spec


def _anchor(name: str) -> str:
    return name.lower()


def type_of(schema: dict[str, Any] | None) -> str:
    """A short rendering of a schema: ``string``, ``AssetEvent[]``, ``integer | null``."""
    if not schema:
        return "any"
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return f"[{name}](#{_anchor(name)})"
    for key, joiner in (("anyOf", " \\| "), ("oneOf", " or ")):
        if key in schema:
            return joiner.join(type_of(s) for s in schema[key])
    kind = schema.get("type")
    if kind == "array":
        return f"{type_of(schema.get('items'))}[]"
    if kind == "object" and "properties" in schema:
        fields = ", ".join(f"{k}: {type_of(v)}" for k, v in schema["properties"].items())
        return f"object {{{fields}}}"
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    if "const" in schema:
        return f"`{schema['const']}`"
    return str(kind or "object")


def _cell(text: Any) -> str:
    return " ".join(str(text or "").split()).replace("|", "\\|")


def _operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path, item in spec.get("paths", {}).items():
        for method in _METHODS:
            if method in item:
                found.append((path, method, item[method]))
    return sorted(found, key=lambda o: (o[2].get("tags", ["~"])[0], o[0], _METHODS.index(o[1])))


def _operation(path: str, method: str, op: dict[str, Any]) -> Iterator[str]:
    yield f"### `{method.upper()} {path}`"
    yield ""
    yield op.get("summary", "")
    if op.get("description"):
        yield ""
        yield op["description"]
    params = op.get("parameters", [])
    if params:
        yield ""
        yield "| parameter | in | type | required | description |"
        yield "|---|---|---|---|---|"
        for p in params:
            schema = p.get("schema", {})
            description = p.get("description") or schema.get("description", "")
            default = schema.get("default")
            if default is not None:
                description = f"{description} (default {json.dumps(default)})".strip()
            required = "yes" if p.get("required") else "no"
            yield f"| `{p['name']}` | {p['in']} | {type_of(schema)} | {required} | {_cell(description)} |"
    body = op.get("requestBody")
    if body:
        schema = body.get("content", {}).get("application/json", {}).get("schema")
        yield ""
        yield f"Body: {type_of(schema)}"
    yield ""
    yield "| status | meaning | body |"
    yield "|---|---|---|"
    for status, answer in sorted(op.get("responses", {}).items()):
        schema = answer.get("content", {}).get("application/json", {}).get("schema")
        shown = "JSON" if schema == {"title": "Return", "type": "string"} else type_of(schema) if schema else "-"
        yield f"| {status} | {_cell(answer.get('description'))} | {shown} |"
    yield ""


def _schema(name: str, schema: dict[str, Any]) -> Iterator[str]:
    yield f"### {name}"
    yield ""
    if schema.get("description"):
        yield " ".join(schema["description"].split())
        yield ""
    properties = schema.get("properties")
    if not properties:
        yield f"Type: {type_of(schema)}"
        yield ""
        return
    required = set(schema.get("required", []))
    yield "| field | type | required | description |"
    yield "|---|---|---|---|"
    for field, prop in properties.items():
        needed = "yes" if field in required else "no"
        yield f"| `{field}` | {type_of(prop)} | {needed} | {_cell(prop.get('description'))} |"
    yield ""


def render(spec: dict[str, Any]) -> str:
    """The Markdown page for an OpenAPI document."""
    info = spec.get("info", {})
    lines = [
        f"# HTTP API ({info.get('title', 'lakehook')} {info.get('version', '')})".rstrip(),
        "",
        f"<!-- Generated from the OpenAPI document by `{REGENERATE}`; do not edit by hand. -->",
        "",
        INTRO,
        limits_section(),
        "## Routes",
        "",
        "| method | path | summary |",
        "|---|---|---|",
    ]
    operations = _operations(spec)
    for path, method, op in operations:
        lines.append(f"| {method.upper()} | `{path}` | {_cell(op.get('summary'))} |")
    lines.append("")
    tag = None
    for path, method, op in operations:
        op_tag = (op.get("tags") or ["other"])[0]
        if op_tag != tag:
            tag = op_tag
            lines += [f"## {tag}", ""]
        lines += list(_operation(path, method, op))
    lines += ["## Schemas", ""]
    for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items()):
        if name not in _INTERNAL_SCHEMAS:
            lines += list(_schema(name, schema))
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description="write docs/api.md from the OpenAPI document")
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/api.md is stale; write nothing")
    parser.add_argument("--path", type=Path, default=DOCS_PATH)
    args = parser.parse_args(argv)
    text = render(load_spec())
    if args.check:
        current = args.path.read_text(encoding="utf-8") if args.path.exists() else ""
        if current != text:
            print(f"{args.path} is stale; regenerate it with: {REGENERATE}", file=sys.stderr)
            return 1
        return 0
    args.path.write_text(text, encoding="utf-8")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
