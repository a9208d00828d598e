"""X-Ray tracing is a choice with a stated cost (docs/deploy.md#tracing): the ``Tracing`` parameter sets every
function's tracing (off by default), ``ApiTraceRate`` the share of API requests traced (0, the default, turns
the API's tracing off), and with tracing off the functions' Powertools tracer is disabled by its environment
variable, so it neither patches nor records. The template's conditions are resolved here by the local runtime's
own reader (``lakehook.local.template``), for each choice, as CloudFormation would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lakehook.local.template import Template
from tests.support import ROOT, TEMPLATE

FUNCTIONS = TEMPLATE.of_type("AWS::Serverless::Function")
MODES = ["Disabled", "PassThrough", "Active"]


def with_parameters(**given: str) -> Template:
    return Template(TEMPLATE.path, TEMPLATE.document, parameters=given)


def function_tracing(template: Template, name: str) -> str:
    """The function's Tracing as SAM reads it: its own, else the Globals'."""
    globals_ = template.document["Globals"]["Function"]
    own = template.resources[name].get("Properties", {})
    return str(template.resolve(own.get("Tracing", globals_.get("Tracing"))))


def test_tracing_is_off_by_default() -> None:
    defaults = TEMPLATE.parameter_defaults()
    assert defaults["Tracing"] == "Disabled"
    assert float(defaults["ApiTraceRate"]) == 0
    assert TEMPLATE.document["Parameters"]["Tracing"]["AllowedValues"] == MODES
    assert {function_tracing(TEMPLATE, name) for name in FUNCTIONS} == {"Disabled"}
    assert TEMPLATE.resolve(TEMPLATE.resources["LakehookApi"]["Properties"]["TracingEnabled"]) is False
    assert not TEMPLATE.condition("TraceApi")


@pytest.mark.parametrize("mode", MODES)
def test_every_function_traces_as_the_parameter_says_and_its_tracer_follows(mode: str) -> None:
    template = with_parameters(Tracing=mode)
    assert len(FUNCTIONS) >= 9
    for name in FUNCTIONS:
        assert function_tracing(template, name) == mode, name
    for spec in template.functions():  # the environment each function is given, as the local runtime reads it
        assert spec.environment["POWERTOOLS_TRACE_DISABLED"] == ("true" if mode == "Disabled" else "false"), spec.name


def test_no_function_sets_its_own_tracing_or_tracer_switch() -> None:
    # One parameter decides for all: a function's own Tracing or POWERTOOLS_TRACE_DISABLED would override it.
    for name, resource in FUNCTIONS.items():
        properties = resource.get("Properties", {})
        assert "Tracing" not in properties, name
        assert "POWERTOOLS_TRACE_DISABLED" not in properties.get("Environment", {}).get("Variables", {}), name


@given(
    st.sampled_from(["0.001", "0.01", "0.05", "0.5", "1"])
    | st.decimals(min_value="0.0001", max_value=1, places=4).map(str)
)
def test_a_rate_above_zero_traces_the_api_by_its_own_sampling_rule_at_that_rate(rate: str) -> None:
    template = with_parameters(ApiTraceRate=rate, Stage="qa")
    assert template.condition("TraceApi")
    assert template.resolve(template.resources["LakehookApi"]["Properties"]["TracingEnabled"]) is True
    sampling = template.resources["ApiTraceSampling"]
    assert sampling["Condition"] == "TraceApi"
    rule = template.resolve(sampling["Properties"]["SamplingRule"])
    assert float(rule["FixedRate"]) == float(rate)
    assert rule["ReservoirSize"] == 0  # no request each second traced besides the rate
    assert rule["ResourceARN"] == "arn:aws:apigateway:us-east-1::/restapis/LakehookApi/stages/qa"
    assert rule["ServiceType"] == "AWS::ApiGateway::Stage"
    assert len(rule["RuleName"].replace("LakehookApi", "x" * 10)) <= 32  # an API id is 10 characters


def test_a_zero_rate_leaves_the_api_untraced_and_creates_no_rule() -> None:
    template = with_parameters(ApiTraceRate="0", Tracing="Active")
    assert not template.condition("TraceApi")
    assert template.resolve(template.resources["LakehookApi"]["Properties"]["TracingEnabled"]) is False


PROBE = """
import json
from lakehook.observability import tracer

traced = tracer()

@traced.capture_lambda_handler(capture_response=False)
def handler(event, context):
    return {"statusCode": 200}

print(json.dumps({"answer": handler({}, None), "disabled": traced.disabled}))
"""


def tracer_in_lambda(mode: str, probe: str = PROBE) -> dict[str, object]:
    """What ``probe`` prints in a Lambda-like process (the function's name and task root set, as Lambda sets them;
    no X-Ray daemon to send to) with the environment of a function deployed with ``Tracing=mode``."""
    spec = with_parameters(Tracing=mode).functions()[0]
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": f"{ROOT / 'src' / 'shared'}:{ROOT}",
        **spec.environment,
        "AWS_LAMBDA_FUNCTION_NAME": spec.name,
        "LAMBDA_TASK_ROOT": str(ROOT / "functions" / "ingest_api"),  # Powertools reads it as "in Lambda"
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_with_tracing_off_the_tracer_is_disabled_in_lambda_and_the_handler_runs() -> None:
    assert tracer_in_lambda("Disabled") == {"answer": {"statusCode": 200}, "disabled": True}


def test_with_tracing_on_the_tracer_is_enabled_in_lambda() -> None:
    # the other side of the switch: the variable, not the absence of Lambda, is what disables it above (the
    # handler is not called: with no X-Ray daemon it would only log that it cannot send)
    probe = PROBE.replace('"answer": handler({}, None), ', "")
    assert tracer_in_lambda("Active", probe) == {"disabled": False}
