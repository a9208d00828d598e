"""What each function imports when Lambda loads it (docs/packaging.md, "Cold starts").

Each handler module is imported from the source tree in a fresh interpreter with the environment Lambda gives
it (``AWS_LAMBDA_FUNCTION_NAME`` and ``LAMBDA_TASK_ROOT`` set, so Powertools and the X-Ray SDK take their Lambda
paths). What a function's requests may need but its import must not pull in: the lakehouse libraries (the poll
worker and the replay API load them on their first poll or pre-flight), the X-Ray SDK outside the two traced
APIs, Powertools' OpenAPI models (built with the document), the rule, dispatch and replay models outside the
functions whose path builds them, the API's answer schemas (deferred until the document is generated),
pydantic-settings (``lakehook.settings`` reads the environment itself), and Powertools' parser models (its batch
utility imports them only when pydantic is imported before it). The ingest API imports no route module (each is
imported on the first request to one of its routes, ``lakehook.api.app.ROUTE_MODULES``), the replay API only its
own route's (``triggers``), and neither imports the rule models or the completion use case for them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, TEMPLATE
from tests.unit.test_deployable import tool_only

FUNCTIONS = {
    logical_id: ROOT / resource["Properties"]["CodeUri"]
    for logical_id, resource in TEMPLATE.resources.items()
    if resource.get("Type") == "AWS::Serverless::Function"
}
TRACED = {"IngestApiFunction", "ReplayApiFunction"}
APIS = TRACED

LAKEHOUSE = ["pyarrow", "pyiceberg", "pypaimon", "fastavro", "deltalake", "hudi", "polars", "pandas", "numpy"]
OPENAPI_MODELS = "aws_lambda_powertools.event_handler.openapi.models"
PARSER_MODELS = "aws_lambda_powertools.utilities.parser.models"
# Built by the builders of the resolver, the dispatcher, the rule routes and the replay route, on first use.
RULES_AND_DISPATCH = [
    "lakehook.domain.rules",
    "lakehook.domain.evaluation",
    "lakehook.domain.targets",
    "lakehook.domain.dispatch",
    "lakehook.usecases.resolve",
    "lakehook.usecases.dispatch",
    "lakehook.usecases.replay",
    "lakehook.adapters.targets",
]

ANSWER_MODULES = [
    "lakehook.answers.base",
    "lakehook.api.answers",
    "lakehook.api.rule_answers",
    "lakehook.answers.triggers",
    "lakehook.answers.assets",
    "lakehook.answers.freshness",
]
# What the route modules bring in besides themselves (their answers, the path parameters, the use cases they call),
# which a function imports with the routes it serves, on the first request to one of them.
ROUTE_MODULES = "lakehook.api.routes"
ROUTES_ONLY = [
    "lakehook.api.answers",
    "lakehook.api.rule_answers",
    "lakehook.domain.rules",
    "lakehook.domain.lineage",
    "lakehook.domain.producers",
    "lakehook.domain.aliases",
    "lakehook.domain.assets",
    "lakehook.usecases.completion",
    "lakehook.usecases.ingest",
    "lakehook.usecases.rules",
    "lakehook.usecases.rule_explain",
    "lakehook.usecases.rule_reads",
    "lakehook.usecases.rule_runs",
    "lakehook.usecases.rule_writes",
]

PROBE = f"""
import json, sys
import app
import lakehook.container
built = sorted(
    name for module in {ANSWER_MODULES!r} if module in sys.modules
    for name, value in vars(sys.modules[module]).items()
    if isinstance(value, type) and getattr(value, "__pydantic_complete__", False) and value.__module__ == module
)
print(json.dumps({{"modules": sorted(sys.modules), "answers_built": built}}))
"""


def imported_by(code_dir: Path) -> dict[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_", "LAKEHOOK_", "LAMBDA_"))}
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(code_dir), str(ROOT / "src" / "shared")]),
            "AWS_LAMBDA_FUNCTION_NAME": "import-test",
            "LAMBDA_TASK_ROOT": str(code_dir),
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "LAKEHOOK_TABLE_NAME": "import-test",
            "POWERTOOLS_SERVICE_NAME": "lakehook",
            "POWERTOOLS_METRICS_NAMESPACE": "Lakehook",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=code_dir, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def loaded(modules: list[str], names: list[str]) -> list[str]:
    """The names (packages or modules) among ``modules``."""
    return sorted({n for n in names for m in modules if m == n or m.startswith(n + ".")})


@pytest.mark.parametrize("function", sorted(FUNCTIONS))
def test_a_handler_imports_only_what_its_path_needs_at_init(function: str) -> None:
    found = imported_by(FUNCTIONS[function])
    modules = found["modules"]
    assert "app" in modules and "lakehook.container" in modules  # the probe did load the handler

    assert loaded(modules, LAKEHOUSE) == []
    # what the layer leaves out (src/shared/tool-only.txt; tests/unit/test_deployable.py walks every import)
    assert loaded(modules, tool_only()) == []
    assert loaded(modules, [OPENAPI_MODELS]) == []
    assert loaded(modules, ["pydantic_settings", "dotenv"]) == []  # lakehook.settings reads the environment itself
    # Powertools' batch utility imports its parser's SQS, DynamoDB, Kinesis and Kafka models for type aliases
    # when pydantic is already imported: the handlers that use it import it before anything imports pydantic.
    assert loaded(modules, [PARSER_MODELS]) == []
    assert ("aws_xray_sdk" in modules) == (function in TRACED)
    if function not in APIS:
        assert loaded(modules, [*RULES_AND_DISPATCH, "lakehook.api", "requests"]) == []
    else:
        assert found["answers_built"] == []  # their schemas are built with the OpenAPI document
    if function == "IngestApiFunction":
        assert loaded(modules, ["requests", "sqlite3", "lakehook.adapters.targets", "lakehook.usecases.replay"]) == []
        # every route module, with its answers and use cases, comes in on the first request to one of its routes
        assert loaded(modules, [ROUTE_MODULES, *ANSWER_MODULES, *ROUTES_ONLY]) == []
    if function == "ReplayApiFunction":
        routes = sorted(m for m in modules if m.startswith(ROUTE_MODULES + "."))
        assert routes == [f"{ROUTE_MODULES}.triggers"]  # its one route, which every request of it calls
        assert loaded(modules, ROUTES_ONLY) == []


def test_the_api_still_builds_its_answer_schemas_for_the_document() -> None:
    from lakehook.answers.triggers import TriggerPage
    from lakehook.api.rule_answers import RulePage

    assert RulePage.model_json_schema(by_alias=True)["properties"]["items"]["type"] == "array"
    assert "nextToken" in TriggerPage.model_json_schema(by_alias=True)["properties"]
