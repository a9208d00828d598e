"""Read template.yaml: the table, buckets and functions with their API, stream, schedule, SQS and S3 events.

CloudFormation's short intrinsic tags (!Ref, !Sub, !GetAtt, …) are parsed into ``{"Ref": …}`` style
dictionaries and resolved against local names, so the template stays the single source of truth.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

_SafeLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, where PyYAML has it: 10x faster


class _Loader(_SafeLoader):  # type: ignore[misc]
    """A YAML loader that understands CloudFormation's short-form intrinsic functions."""


def _intrinsic(tag: str) -> Any:
    name = "Ref" if tag == "Ref" else f"Fn::{tag}"

    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
            if tag == "GetAtt":
                value = str(value).split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
        return {name: value}

    return construct


for _tag in (
    "Ref",
    "Sub",
    "GetAtt",
    "Join",
    "Select",
    "Split",
    "If",
    "Equals",
    "Not",
    "And",
    "Or",
    "FindInMap",
    "ImportValue",
    "Base64",
    "Cidr",
    "GetAZs",
    "Condition",
):
    _Loader.add_constructor(f"!{_tag}", _intrinsic(_tag))


@dataclass(frozen=True)
class ApiRoute:
    method: str
    path: str  # API Gateway form, e.g. /producers/{producerId}
    auth: str  # "AWS_IAM" or "NONE"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """Path parameters if this route serves the request, else None."""
        if method.upper() != self.method.upper():
            return None
        want, got = self.path.strip("/").split("/"), path.strip("/").split("/")
        if want[-1].endswith("+}"):  # a greedy {proxy+} takes the rest of the path
            head = len(want) - 1
            if len(got) <= head:
                return None
            got = [*got[:head], "/".join(got[head:])]
        if len(want) != len(got):
            return None
        params: dict[str, str] = {}
        for pattern, segment in zip(want, got, strict=True):
            if pattern.startswith("{") and pattern.endswith("}"):
                if not segment:
                    return None
                params[pattern[1:-1].rstrip("+")] = unquote(segment)
            elif pattern != segment:
                return None
        return params


@dataclass(frozen=True)
class StreamSubscription:
    batch_size: int
    filters: list[dict[str, Any]]
    report_batch_item_failures: bool
    maximum_retry_attempts: int | None
    starting_position: str
    parallelization_factor: int = 1  # concurrent batches per shard (Lambda: 1 to 10)


@dataclass(frozen=True)
class ScheduleSubscription:
    name: str
    rate_seconds: float
    input: str | None


@dataclass(frozen=True)
class BucketSubscription:
    """An S3 event: the bucket's logical id, the event names and the key filter."""

    bucket: str
    events: tuple[str, ...]
    prefix: str = ""
    suffix: str = ""


@dataclass(frozen=True)
class RuleSubscription:
    """An EventBridgeRule event: its name, the event pattern (intrinsics resolved) and the bus."""

    name: str
    pattern: dict[str, Any]
    bus: str = "default"


@dataclass
class FunctionSpec:
    name: str
    code_uri: Path
    handler: str
    environment: dict[str, str]
    timeout: int
    memory_size: int = 128  # MB, Lambda's default
    routes: list[ApiRoute] = field(default_factory=list)
    streams: list[StreamSubscription] = field(default_factory=list)
    schedules: list[ScheduleSubscription] = field(default_factory=list)
    queues: list[tuple[str, int]] = field(default_factory=list)  # (queue logical id, batch size)
    buckets: list[BucketSubscription] = field(default_factory=list)
    rules: list[RuleSubscription] = field(default_factory=list)


_RATE = re.compile(r"^rate\((\d+)\s+(minute|minutes|hour|hours|day|days|second|seconds)\)$")
_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}


def rate_seconds(expression: str) -> float:
    """Seconds between firings of an EventBridge ``rate(...)`` expression (cron is unsupported locally)."""
    found = _RATE.match(expression.strip())
    if not found:
        raise ValueError(f"the local runtime runs rate(...) schedules only, not {expression!r}")
    return int(found.group(1)) * _UNIT_SECONDS[found.group(2).rstrip("s")]


class Template:
    """A parsed SAM template with the local names of its resources.

    ``parameters`` overrides parameter defaults, as a deploy's parameter values do; conditions (``Fn::If``) are
    decided on the values that result.
    """

    def __init__(
        self,
        path: Path,
        document: dict[str, Any],
        names: dict[str, str] | None = None,
        parameters: dict[str, str] | None = None,
    ) -> None:
        self.path = path
        self.root = path.parent
        self.document = document
        self.names: dict[str, str] = dict(names or {})
        self.parameters: dict[str, str] = dict(parameters or {})

    @classmethod
    def load(
        cls, path: Path | str, names: dict[str, str] | None = None, parameters: dict[str, str] | None = None
    ) -> Template:
        file = Path(path)
        document = yaml.load(file.read_text(), Loader=_Loader)
        return cls(file, document, names, parameters)

    @property
    def resources(self) -> dict[str, Any]:
        return self.document.get("Resources", {})  # type: ignore[no-any-return]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: v for k, v in self.resources.items() if v.get("Type") == resource_type}

    # --- intrinsic resolution ---------------------------------------------------------------

    def parameter_defaults(self) -> dict[str, str]:
        return {k: str(v.get("Default", "")) for k, v in self.document.get("Parameters", {}).items()}

    def _lookup(self, stack_name: str) -> dict[str, str]:
        pseudo = {
            "AWS::StackName": stack_name,
            "AWS::Region": "us-east-1",
            "AWS::AccountId": "123456789012",
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
        }
        return {**pseudo, **self.parameter_defaults(), **self.parameters, **self.names}

    def resolve(self, value: Any, stack_name: str = "lakehook-local") -> Any:
        """Resolve intrinsics against local names, parameters (their defaults unless given), pseudo parameters
        and the template's conditions."""
        if isinstance(value, dict) and len(value) == 1:
            ((key, arg),) = value.items()
            intrinsic = _INTRINSICS.get(key)
            if intrinsic is not None:
                return intrinsic(self, arg, stack_name)
        if isinstance(value, dict):
            return {k: self.resolve(v, stack_name) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v, stack_name) for v in value]
        return value

    def condition(self, name: str, stack_name: str = "lakehook-local") -> bool:
        """Whether the template's condition ``name`` holds for these parameters."""
        conditions = self.document.get("Conditions", {})
        if name not in conditions:
            raise ValueError(f"{self.path} has no condition {name!r}")
        return self._holds(conditions[name], stack_name)

    def _holds(self, expression: Any, stack_name: str) -> bool:
        ((key, arg),) = expression.items()
        if key in ("Condition", "Fn::Condition"):  # the loader reads !Condition as Fn::Condition
            return self.condition(arg, stack_name)
        if key == "Fn::Equals":
            left, right = (str(self.resolve(side, stack_name)) for side in arg)
            return left == right
        if key == "Fn::Not":
            return not self._holds(arg[0], stack_name)
        if key == "Fn::And":
            return all(self._holds(part, stack_name) for part in arg)
        if key == "Fn::Or":
            return any(self._holds(part, stack_name) for part in arg)
        raise ValueError(f"a condition the local runtime cannot decide: {expression!r}")

    def _ref(self, name: str, stack_name: str) -> Any:
        return self._lookup(stack_name).get(name, name)

    def _sub(self, arg: Any, stack_name: str) -> str:
        lookup = self._lookup(stack_name)
        text = arg if isinstance(arg, str) else arg[0]
        extra = {} if isinstance(arg, str) else {k: self.resolve(v, stack_name) for k, v in arg[1].items()}
        return re.sub(r"\$\{([^}]+)\}", lambda m: str(extra.get(m.group(1), lookup.get(m.group(1), m.group(1)))), text)

    def _get_att(self, arg: Any, stack_name: str) -> str:
        resource, attribute = arg
        return f"{self._lookup(stack_name).get(resource, resource)}.{attribute}"

    def _join(self, arg: Any, stack_name: str) -> str:
        sep, items = arg
        return str(sep).join(str(self.resolve(i, stack_name)) for i in items)

    def _select(self, arg: Any, stack_name: str) -> Any:
        index, items = arg
        return self.resolve(items, stack_name)[int(index)]

    def _split(self, arg: Any, stack_name: str) -> list[str]:
        sep, text = arg
        return str(self.resolve(text, stack_name)).split(str(sep))

    def _if(self, arg: Any, stack_name: str) -> Any:
        name, then, otherwise = arg
        return self.resolve(then if self.condition(name, stack_name) else otherwise, stack_name)

    # --- the table ----------------------------------------------------------------------------

    def table(self) -> tuple[str, dict[str, Any]]:
        tables = self.of_type("AWS::DynamoDB::Table")
        if len(tables) != 1:
            raise ValueError(f"expected one DynamoDB table in {self.path}, found {len(tables)}")
        ((logical_id, resource),) = tables.items()
        return logical_id, resource["Properties"]

    def create_table(self, client: Any, table_name: str) -> None:
        """Create the table as declared: keys, indexes, stream, TTL (PITR and SSE have no local effect)."""
        _, props = self.table()
        kwargs: dict[str, Any] = {
            "TableName": table_name,
            "AttributeDefinitions": props["AttributeDefinitions"],
            "KeySchema": props["KeySchema"],
            "BillingMode": props.get("BillingMode", "PAY_PER_REQUEST"),
        }
        if props.get("GlobalSecondaryIndexes"):
            kwargs["GlobalSecondaryIndexes"] = props["GlobalSecondaryIndexes"]
        stream = props.get("StreamSpecification")
        if stream:
            kwargs["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
        client.create_table(**kwargs)
        ttl = props.get("TimeToLiveSpecification")
        if ttl and ttl.get("Enabled"):
            client.update_time_to_live(
                TableName=table_name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )

    def buckets(self) -> list[str]:
        return list(self.of_type("AWS::S3::Bucket"))

    def bucket_name(self, logical_id: str, default: str) -> str:
        """The bucket's declared BucketName, resolved, or ``default`` when the template leaves it to CloudFormation."""
        declared = self.resources[logical_id].get("Properties", {}).get("BucketName")
        return default if declared is None else str(self.resolve(declared))

    def queues(self) -> list[str]:
        return list(self.of_type("AWS::SQS::Queue"))

    # --- functions ----------------------------------------------------------------------------

    def functions(self) -> list[FunctionSpec]:
        globals_ = self.document.get("Globals", {}).get("Function", {})
        specs = []
        for name, resource in self.of_type("AWS::Serverless::Function").items():
            props = {**globals_, **resource.get("Properties", {})}
            env = {
                **globals_.get("Environment", {}).get("Variables", {}),
                **resource.get("Properties", {}).get("Environment", {}).get("Variables", {}),
            }
            spec = FunctionSpec(
                name=name,
                code_uri=(self.root / props["CodeUri"]).resolve(),
                handler=props["Handler"],
                environment={k: str(self.resolve(v)) for k, v in env.items()},
                timeout=int(props.get("Timeout", 3)),
                memory_size=int(props.get("MemorySize", 128)),
            )
            for event_name, event in props.get("Events", {}).items():
                self._add_event(spec, event, globals_, f"{name}-{event_name}")
            specs.append(spec)
        return specs

    def _add_event(self, spec: FunctionSpec, event: dict[str, Any], globals_: dict[str, Any], name: str) -> None:
        """One of the function's events as its subscription (an event of a type the runtime does not run: none)."""
        add = _EVENT_KINDS.get(event.get("Type"))
        if add is not None:
            add(self, spec, event.get("Properties", {}), name)

    def _add_rule(self, spec: FunctionSpec, p: dict[str, Any], name: str) -> None:
        if p.get("State", "ENABLED") != "DISABLED":
            bus = str(self.resolve(p.get("EventBusName", "default")))
            spec.rules.append(RuleSubscription(name=name, pattern=self.resolve(p["Pattern"]), bus=bus))

    def _add_route(self, spec: FunctionSpec, p: dict[str, Any], name: str) -> None:
        auth = p.get("Auth", {}).get("Authorizer", "AWS_IAM")
        spec.routes.append(ApiRoute(method=p["Method"], path=p["Path"], auth=auth))

    def _add_stream(self, spec: FunctionSpec, p: dict[str, Any], name: str) -> None:
        filters = [f.get("Pattern") for f in p.get("FilterCriteria", {}).get("Filters", [])]
        spec.streams.append(
            StreamSubscription(
                batch_size=int(self.resolve(p.get("BatchSize", 100))),
                filters=[_json(f) for f in filters if f],
                report_batch_item_failures="ReportBatchItemFailures" in p.get("FunctionResponseTypes", []),
                maximum_retry_attempts=p.get("MaximumRetryAttempts"),
                starting_position=p.get("StartingPosition", "LATEST"),
                parallelization_factor=max(1, min(10, int(p.get("ParallelizationFactor", 1)))),
            )
        )

    def _add_schedule(self, spec: FunctionSpec, p: dict[str, Any], name: str) -> None:
        expression = p.get("Schedule") or p.get("ScheduleExpression")
        enabled = p.get("Enabled", p.get("State", "ENABLED") != "DISABLED")
        if enabled:
            spec.schedules.append(
                ScheduleSubscription(
                    name=str(self.resolve(p.get("Name", spec.name))),
                    rate_seconds=rate_seconds(str(self.resolve(expression))),
                    input=p.get("Input"),
                )
            )

    def _add_queue(self, spec: FunctionSpec, p: dict[str, Any], name: str) -> None:
        queue = p["Queue"]
        logical = queue["Fn::GetAtt"][0] if isinstance(queue, dict) and "Fn::GetAtt" in queue else str(queue)
        spec.queues.append((logical, int(self.resolve(p.get("BatchSize", 10)))))

    def _add_bucket(self, spec: FunctionSpec, p: dict[str, Any], name: str) -> None:
        bucket = p["Bucket"]
        logical = bucket["Ref"] if isinstance(bucket, dict) and "Ref" in bucket else str(bucket)
        events = p.get("Events", [])
        rules = {r["Name"].lower(): r["Value"] for r in p.get("Filter", {}).get("S3Key", {}).get("Rules", [])}
        spec.buckets.append(
            BucketSubscription(
                bucket=logical,
                events=tuple([events] if isinstance(events, str) else events),
                prefix=rules.get("prefix", ""),
                suffix=rules.get("suffix", ""),
            )
        )


# a function event's Type -> the method adding its subscription to the function's spec
_EVENT_KINDS: dict[Any, Callable[[Template, FunctionSpec, dict[str, Any], str], None]] = {
    "EventBridgeRule": Template._add_rule,
    "Api": Template._add_route,
    "DynamoDB": Template._add_stream,
    "Schedule": Template._add_schedule,
    "ScheduleV2": Template._add_schedule,
    "SQS": Template._add_queue,
    "S3": Template._add_bucket,
}

_INTRINSICS: dict[str, Callable[[Template, Any, str], Any]] = {
    "Ref": Template._ref,
    "Fn::Sub": Template._sub,
    "Fn::GetAtt": Template._get_att,
    "Fn::Join": Template._join,
    "Fn::If": Template._if,
    "Fn::Select": Template._select,
    "Fn::Split": Template._split,
}


def _json(pattern: Any) -> dict[str, Any]:
    import json

    if isinstance(pattern, str):
        return json.loads(pattern)  # type: ignore[no-any-return]
    return pattern  # type: ignore[no-any-return]
