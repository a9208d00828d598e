"""The base of the AWS job targets that start a run with one request and look runs up page by page (Glue, Batch,
EMR Serverless, ECS): the client made on first use, the start request's failures as Outcomes, and the look-up of
the trigger's run among the pages of a list request.

A subclass names its service (``service``, the boto3 client's name), its start request (``start_action``) and the
field of the answer that is the run id (``run_id_field``), and writes ``_start`` (the request) and ``find_run``
(with :meth:`AwsJobTargetClient._find_in_list`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Collection, Mapping
from typing import Any, ClassVar, Self

from botocore.exceptions import BotoCoreError, ClientError

from lakehook.adapters.targets.aws_errors import client_error_outcome, transport_outcome
from lakehook.adapters.targets.aws_runs import LazyClient, ask_aws, find_in_pages
from lakehook.adapters.targets.deps import TargetDeps
from lakehook.domain.dispatch import Invocation, Outcome
from lakehook.domain.targets import TargetConfig
from lakehook.ports.dispatch import TargetClient

Match = Callable[[dict[str, Any]], str | None]


class AwsJobTargetClient(TargetClient):
    """Runs of an AWS job service, started by one request and confirmed by a look-up before any retry."""

    service: ClassVar[str]  # the boto3 client's service name
    start_action: ClassVar[str]  # the start request's name, in the outcome's reason
    run_id_field: ClassVar[str]  # the start answer's field that is the run id
    busy: ClassVar[frozenset[str]] = frozenset()  # the service's own "busy, try later" error codes
    default_max_pages: ClassVar[int]
    confirmable: ClassVar[bool] = True

    def __init__(self, client: Any, max_pages: int | None = None) -> None:
        self._client = client
        self._max_pages = self.default_max_pages if max_pages is None else max_pages

    @classmethod
    def build(cls, deps: TargetDeps) -> Self:
        return cls(LazyClient(lambda: deps.aws(cls.service)))

    def start(self, invocation: Invocation, config: TargetConfig) -> Outcome:
        try:
            answer = self._start(invocation, config)
        except ClientError as exc:
            return client_error_outcome(exc, self.start_action, busy=self.busy)
        except BotoCoreError as exc:
            return transport_outcome(exc, self.start_action)
        return self._started(answer)

    @abstractmethod
    def _start(self, invocation: Invocation, config: TargetConfig) -> dict[str, Any]:
        """The start request's answer (its failures raise as boto3 raises them)."""

    def _started(self, answer: dict[str, Any]) -> Outcome:
        return Outcome.started(str(answer[self.run_id_field]))

    def _find_in_list(
        self,
        what: str,
        method: str,
        request: Mapping[str, Any],
        listed: Callable[[dict[str, Any]], list[dict[str, Any]]],
        match: Match,
        token_name: str = "nextToken",
        missing: Collection[str] = (),
    ) -> str | None:
        """The run ``match`` finds among the items ``listed`` from the pages of the client's ``method(**request)``
        (the request ``what``, its page token ``token_name`` in the request and the answer; ``missing``: error codes
        that mean no run). The client is reached inside :func:`ask_aws`: one that cannot be made (a BotoCoreError
        on its first use) is TargetUnavailableError, as a failed request is."""

        def page(token: str | None) -> tuple[list[dict[str, Any]], str | None]:
            kwargs = {**request, token_name: token} if token else dict(request)
            answer = ask_aws(what, lambda: getattr(self._client, method)(**kwargs), missing=missing) or {}
            return listed(answer), answer.get(token_name)

        return find_in_pages(what, page, match, self._max_pages)


def items(key: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """The items of a list answer under ``key``."""
    return lambda answer: list(answer.get(key, []))
