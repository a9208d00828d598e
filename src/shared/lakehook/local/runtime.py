"""The local stack: moto on loopback, the template's resources, and its functions driven in-process."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

import boto3
import requests

from lakehook import container
from lakehook.local import moto_streams
from lakehook.local.eventbridge import RuleDelivery
from lakehook.local.gateway import ApiGateway
from lakehook.local.invoker import LocalFunction
from lakehook.local.moto_streams import StreamReader
from lakehook.local.notifications import BucketWatcher, wants_created
from lakehook.local.schedules import QueuePoller, Scheduler
from lakehook.local.streams import StreamTailer
from lakehook.local.template import Template
from lakehook.settings import get_settings

log = logging.getLogger("lakehook.local")

DEFAULT_TEMPLATE = Path(__file__).resolve().parents[4] / "template.yaml"
LOCAL_STACK = "lakehook-local"
GRACE_POLLS = 30  # a snapshot the local poll has not recorded after this many of its turns is a miss
# GenerateSecretString options that GetRandomPassword takes too (SecretStringTemplate and GenerateStringKey
# build a JSON secret; lakehook's secrets are plain strings).
_RANDOM_PASSWORD_OPTIONS = frozenset(
    {
        "PasswordLength",
        "ExcludeCharacters",
        "ExcludeNumbers",
        "ExcludePunctuation",
        "ExcludeUppercase",
        "ExcludeLowercase",
        "IncludeSpace",
        "RequireEachIncludedType",
    }
)
# What a function's environment takes from the machine's (the rest is the template's and the stack's, as on
# Lambda): where programs and the home directory are, the locale and the time zone.
_HOST_VARIABLES = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR")
_FAKE_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "local"}


def _speed_up_moto_dispatch() -> None:
    """Answer moto's "which backend serves this host" without listing moto's package directory each time.

    moto's server looks the backend up on every request under one application-wide lock, and the lookup
    lists moto's ~200 package directories (``os.listdir`` and an ``isdir`` each): that directory walk, done
    serially under the lock, was a tenth of the local stack's busy time under load. The list is fixed for a
    given moto install, so it is read once.
    """
    from moto import backends

    if getattr(backends.list_of_moto_modules, "_lakehook_cached", False):
        return
    modules = tuple(backends.list_of_moto_modules())

    def cached() -> tuple[str, ...]:
        return modules

    cached._lakehook_cached = True  # type: ignore[attr-defined]
    backends.list_of_moto_modules = cached


def compensation_grace(poll_every: float | None) -> dict[str, str]:
    """``poll_every`` fires the compensation schedule as often as the poll (not every 15 polls): its grace, the
    age before a snapshot is compensation's to record rather than the poll's, scales with the poll the same way
    (``GRACE_POLLS`` turns of the poll), so a healthy local stack never labels a snapshot COMPENSATION."""
    if poll_every is None:
        return {}
    return {"LAKEHOOK_COMPENSATION_GRACE_SECONDS": str(GRACE_POLLS * poll_every)}


class LocalStack:
    """Everything ``lakehook local up`` runs. Use as a context manager or call start()/stop()."""

    def __init__(
        self,
        *,
        template: Path | str = DEFAULT_TEMPLATE,
        host: str = "127.0.0.1",
        port: int = 0,
        admin_token: str = "local-admin",
        poll_every: float | None = None,
        region: str = "us-east-1",
        moto_port: int = 0,
        extra_env: dict[str, str] | None = None,
        schedule_rates: Mapping[str, float] | None = None,
        parameters: Mapping[str, str] | None = None,
        max_environments: int = 8,
    ) -> None:
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the local stack listens on loopback only (127.0.0.1, localhost or ::1)")
        self.template_path = Path(template)
        self.host, self.port, self.region = host, port, region
        self.admin_token = admin_token
        self.poll_every = poll_every
        self.moto_port = moto_port
        self.extra_env = dict(extra_env or {})
        self.max_environments = max_environments  # execution environments per function at most
        self.schedule_rates = dict(schedule_rates or {})  # seconds per function logical id, over poll_every
        self.endpoint_url = ""
        self.table_name = f"{LOCAL_STACK}-table"
        self.names: dict[str, str] = dict(parameters or {})  # template parameters over their defaults
        self.functions: list[LocalFunction] = []
        self._moto: Any = None
        self._gateway: ApiGateway | None = None
        self._tailer: StreamTailer | None = None
        self._scheduler: Scheduler | None = None
        self._queues: list[QueuePoller] = []
        self._watchers: list[BucketWatcher] = []
        self._rules: list[RuleDelivery] = []
        self._saved_env: dict[str, str | None] = {}
        self._session: Any = None

    # --- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> LocalStack:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        assert self._gateway is not None, "start() first"
        return self._gateway.url

    def start(self) -> None:
        try:
            self._start()
        except BaseException:
            self.stop()  # never leave moto or threads behind when start fails half-way
            raise

    def _start(self) -> None:
        from lakehook.local import moto_dynamodb, moto_locks
        from lakehook.local.moto_server import LocalMotoServer

        moto_locks.install()  # item locks, transaction conflicts, a short data latch: docs/local.md
        _speed_up_moto_dispatch()
        moto_dynamodb.install()  # Query and TransactWriteItems stay near constant as the table fills
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # moto's per-request access log
        # moto behind a guard: no CORS, no web page's origin, loopback Host only (lakehook.local.moto_server)
        self._moto = LocalMotoServer(ip_address="127.0.0.1", port=self.moto_port)
        self._moto.start()
        host, port = self._moto.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        # moto keeps its backends per process: start from an empty account, as a fresh stack would.
        requests.post(f"{self.endpoint_url}/moto-api/reset", timeout=10).raise_for_status()
        self._set_env(
            {
                **_FAKE_CREDENTIALS,
                "AWS_DEFAULT_REGION": self.region,
                "AWS_REGION": self.region,
                "AWS_ENDPOINT_URL": self.endpoint_url,
            }
        )
        template = Template.load(self.template_path)
        self._create_resources(template)
        template = Template(template.path, template.document, names=self.names)  # parsed once, names now known
        specs = template.functions()
        stack_env = {
            **_FAKE_CREDENTIALS,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "LAKEHOOK_ENDPOINT_URL": self.endpoint_url,
            "LAKEHOOK_ADMIN_TOKEN": self.admin_token,
            "LAKEHOOK_REGION": self.region,
            "LAKEHOOK_STAGE": "local",
            "POWERTOOLS_TRACE_DISABLED": "true",
            "LAKEHOOK_ALLOW_INSECURE_LOOPBACK_TARGETS": "true",  # local targets are plain http on loopback
            **compensation_grace(self.poll_every),
        }
        self._set_env(stack_env | self.extra_env)  # for the stack's own clients; functions get theirs below
        get_settings.cache_clear()
        container.use(None)
        host = {name: os.environ[name] for name in _HOST_VARIABLES if name in os.environ}
        self.functions = [
            LocalFunction(spec, host | spec.environment | stack_env | self.extra_env, self.max_environments)
            for spec in specs
        ]
        self._start_functions()

        def variable(name: str) -> str:
            return next((s.environment[name] for s in specs if name in s.environment), "")

        local_info = {
            "endpointUrl": self.endpoint_url,
            "region": self.region,
            "secretPrefix": variable("LAKEHOOK_SECRET_PREFIX"),
            "producerSecretPrefix": variable("LAKEHOOK_PRODUCER_SECRET_PREFIX"),
        }
        self._gateway = ApiGateway(
            [f for f in self.functions if f.spec.routes],
            self.host,
            self.port,
            local_info=local_info,
            admin_token=self.admin_token,
        )
        self._gateway.start()
        stream_arn = self._client("dynamodb").describe_table(TableName=self.table_name)["Table"].get("LatestStreamArn")
        if stream_arn:
            self._tailer = StreamTailer(self._stream_reader(stream_arn), self.functions)
            self._tailer.start()
        self._scheduler = Scheduler(self.functions, every=self.poll_every, rates=self.schedule_rates)
        self._scheduler.start()
        self._start_queue_pollers()
        self._start_bucket_watchers()
        self._start_rule_deliveries()
        log.info("local stack ready at %s (moto at %s)", self.api_url, self.endpoint_url)

    def stop(self) -> None:
        for delivery in self._rules:
            delivery.stop()
        for watcher in self._watchers:
            watcher.stop()
        for poller in self._queues:
            poller.stop()
        if self._scheduler:
            self._scheduler.stop()
        if self._tailer:
            self._tailer.stop()
        if self._gateway:
            self._gateway.stop()
        for fn in self.functions:
            fn.stop()
        if self._moto:
            self._moto.stop()
            self._moto = None
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self._saved_env.clear()
        get_settings.cache_clear()
        container.use(None)

    def _start_functions(self) -> None:
        """Start one execution environment per function, concurrently: a broken handler fails the start."""
        with ThreadPoolExecutor(max_workers=4, thread_name_prefix="lakehook-init") as pool:
            for future in [pool.submit(fn.start) for fn in self.functions]:
                future.result()

    def fire_schedule(self, function_name: str) -> int:
        """Run a scheduled function's schedules once, now (e.g. the poll planner), and answer how many ran."""
        assert self._scheduler is not None, "start() first"
        return self._scheduler.fire(function_name)

    def enable_stream(self, function_name: str, enabled: bool = True) -> list[dict[str, Any]]:
        """Enable or disable a function's stream mappings, as UpdateEventSourceMapping's ``Enabled`` does:
        disabled, records queue up and nothing is delivered (``wait_idle`` waits for them). Answers the stream
        records the mappings hold, not yet handled."""
        assert self._tailer is not None, "start() first, on a template with a table stream"
        return self._tailer.enable(function_name, enabled)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait until the stream has been drained into its functions (every record delivered and handled)."""
        return self._tailer.wait_idle(timeout) if self._tailer else True

    # --- resources ------------------------------------------------------------------------------

    def _set_env(self, values: dict[str, str]) -> None:
        for name, value in values.items():
            self._saved_env.setdefault(name, os.environ.get(name))
            os.environ[name] = value

    def _stream_reader(self, stream_arn: str) -> StreamReader:
        """moto's memory when this moto can be read so (it runs in this process), else the Streams API."""
        if moto_streams.supported():
            return moto_streams.MotoStreamReader(stream_arn)
        return moto_streams.HttpStreamReader(self._client("dynamodbstreams"), stream_arn)

    def _client(self, service: str) -> Any:
        """A client of the stack's moto server, from one session (its models are loaded once)."""
        if self._session is None:
            self._session = boto3.session.Session(region_name=self.region)
        return self._session.client(service, endpoint_url=self.endpoint_url)

    def _create_resources(self, template: Template) -> None:
        table_id, _ = template.table()
        self.names[table_id] = self.table_name
        template.create_table(self._client("dynamodb"), self.table_name)
        s3 = self._client("s3")
        for logical_id in template.buckets():
            bucket = template.bucket_name(logical_id, f"{LOCAL_STACK}-{logical_id.lower()}")
            s3.create_bucket(Bucket=bucket)
            self.names[logical_id] = bucket
        self._create_secrets(template)
        events = self._client("events")
        for logical_id, resource in template.of_type("AWS::Events::EventBus").items():
            name = str(template.resolve(resource.get("Properties", {}).get("Name", logical_id), LOCAL_STACK))
            events.create_event_bus(Name=name)
            self.names[logical_id] = name
        sqs = self._client("sqs")
        for logical_id in template.queues():
            props = template.resources[logical_id].get("Properties", {})
            attributes = {"VisibilityTimeout": str(props.get("VisibilityTimeout", 30))}
            url = sqs.create_queue(QueueName=f"{LOCAL_STACK}-{logical_id}", Attributes=attributes)["QueueUrl"]
            self.names[logical_id] = url
            self.names[f"{logical_id}.Arn"] = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])[
                "Attributes"
            ]["QueueArn"]

    def _create_secrets(self, template: Template) -> None:
        """Each AWS::SecretsManager::Secret with its generated value, as CloudFormation would make it
        (CreateSecret has no GenerateSecretString: the value comes from GetRandomPassword with the same options)."""
        client = self._client("secretsmanager")
        for logical_id, resource in template.of_type("AWS::SecretsManager::Secret").items():
            props = resource.get("Properties", {})
            name = str(template.resolve(props.get("Name", f"{LOCAL_STACK}/{logical_id}"), LOCAL_STACK))
            generate = props.get("GenerateSecretString") or {}
            options = {k: v for k, v in generate.items() if k in _RANDOM_PASSWORD_OPTIONS}
            value = client.get_random_password(**options)["RandomPassword"]
            self.names[logical_id] = client.create_secret(Name=name, SecretString=value)["ARN"]

    def _start_queue_pollers(self) -> None:
        sqs = self._client("sqs")
        for fn in self.functions:
            for logical_id, batch_size in fn.spec.queues:
                poller = QueuePoller(sqs, fn, self.names[logical_id], self.names[f"{logical_id}.Arn"], batch_size)
                poller.start()
                self._queues.append(poller)

    @property
    def rule_deliveries(self) -> list[RuleDelivery]:
        """The EventBridge rules delivering to functions (one per EventBridgeRule event of the template)."""
        return list(self._rules)

    def _start_rule_deliveries(self) -> None:
        events, sqs = self._client("events"), self._client("sqs")
        for fn in self.functions:
            for rule in fn.spec.rules:
                delivery = RuleDelivery(events, sqs, fn, rule)
                delivery.start()
                self._rules.append(delivery)

    @property
    def watchers(self) -> list[BucketWatcher]:
        """The S3 notification watchers running (one per bucket subscription)."""
        return list(self._watchers)

    def _start_bucket_watchers(self) -> None:
        s3 = self._client("s3")
        for fn in self.functions:
            for subscription in fn.spec.buckets:
                if wants_created(subscription):
                    watcher = BucketWatcher(s3, fn, self.names[subscription.bucket], subscription)
                    watcher.start()
                    self._watchers.append(watcher)
