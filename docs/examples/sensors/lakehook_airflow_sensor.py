"""An Airflow 3 deferrable sensor that waits, inside a running DAG, for a lakehook condition (RFC §4, Strategy A).

``LakehookSensor`` asks ``POST /sensors/evaluate`` whether a rule's groups (or an ad-hoc group) hold now. With
``deferrable=True`` (the default here) it frees its worker slot at once and defers to ``LakehookConditionTrigger``,
which long-polls the API from the triggerer (each request waits up to 20 s on the server, in a thread so the
triggerer's event loop never blocks) until the condition holds or the sensor's ``timeout`` passes. The task then
resumes in ``execute_complete`` and returns the pinned versions (its XCom): the snapshots your next task reads.

Put this module where every Airflow component imports from (``$AIRFLOW_HOME/plugins`` is on their ``sys.path``, or
a package you install); the trigger is found by its module path, so a DAG file's mangled module name will not do.
It needs ``lakehook-client`` (standard library only) in Airflow's environment. Imports are Airflow 3's task SDK
(``airflow.sdk``) and the triggerer's ``airflow.triggers.base``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from datetime import timedelta
from typing import Any

from airflow.sdk import BaseSensorOperator
from airflow.sdk.exceptions import AirflowException, AirflowSensorTimeout
from airflow.triggers.base import BaseTrigger, TriggerEvent

from lakehook.client import LakehookClient, SensorError, SensorResult, SensorUnavailableError

MAX_WAIT_SECONDS = 20  # the server's bound on one long-poll


def _client(url: str, token: str | None) -> LakehookClient:
    return LakehookClient(url, token=token or None)


def _event(result: SensorResult) -> dict[str, Any]:
    return {
        "status": "ready" if result.ready else "waiting",
        "verdict": result.verdict,
        "groupId": result.group_id,
        "reason": result.reason,
        "pins": result.pins,
    }


class LakehookConditionTrigger(BaseTrigger):
    """Long-polls lakehook until the condition holds (one ``ready`` event) or ``deadline`` (epoch seconds) passes
    (one ``timeout`` event naming what it still waits for). A refused request (an unknown rule, a malformed group)
    ends it with an ``error`` event; 429, 5xx and connection errors are retried until the deadline."""

    def __init__(
        self,
        url: str,
        deadline: float,
        rule: str | None = None,
        group: Mapping[str, Any] | None = None,
        group_id: str | None = None,
        token: str | None = None,
    ) -> None:
        super().__init__()
        self.url, self.deadline, self.token = url, deadline, token
        self.rule, self.group, self.group_id = rule, dict(group) if group else None, group_id

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "url": self.url,
                "deadline": self.deadline,
                "rule": self.rule,
                "group": self.group,
                "group_id": self.group_id,
                "token": self.token,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        client = _client(self.url, self.token)
        while True:
            wait = int(min(MAX_WAIT_SECONDS, max(self.deadline - time.time(), 0)))
            try:
                result = await asyncio.to_thread(
                    client.evaluate, self.rule, group=self.group, group_id=self.group_id, wait_seconds=wait
                )
            except SensorUnavailableError as exc:  # the client retried with backoff; wait the outage out
                if time.time() < self.deadline:
                    self.log.warning("lakehook unavailable, still waiting: %s", exc)
                    continue
                yield TriggerEvent({"status": "error", "message": str(exc)})
                return
            except SensorError as exc:  # refused: an unknown rule, a malformed group
                yield TriggerEvent({"status": "error", "message": str(exc)})
                return
            if result.ready:
                yield TriggerEvent(_event(result))
                return
            if time.time() >= self.deadline:
                yield TriggerEvent({**_event(result), "status": "timeout"})
                return
            if wait == 0:  # under a second left: no long-poll to wait in
                await asyncio.sleep(max(self.deadline - time.time(), 0))


class LakehookSensor(BaseSensorOperator):
    """Wait until lakehook says ``rule`` (or ``group_id`` of it, or the ad-hoc ``group``) holds; returns the pins.

    ``lakehook_url`` and ``token`` are templated (e.g. ``{{ var.value.lakehook_api_url }}``), so is ``rule``.
    ``timeout`` (seconds) bounds the wait in both modes; ``deferrable=False`` pokes every ``poke_interval`` instead.
    """

    template_fields: Sequence[str] = ("lakehook_url", "token", "rule", "group_id")

    def __init__(
        self,
        *,
        lakehook_url: str,
        rule: str | None = None,
        group: Mapping[str, Any] | None = None,
        group_id: str | None = None,
        token: str | None = None,
        deferrable: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.lakehook_url, self.token = lakehook_url, token
        self.rule, self.group, self.group_id = rule, group, group_id
        self.deferrable = deferrable

    def poke(self, context: Any) -> bool:
        result = _client(self.lakehook_url, self.token).evaluate(self.rule, group=self.group, group_id=self.group_id)
        self.log.info("lakehook condition %s: %s (%s)", result.group_id, result.verdict, result.reason)
        return result.ready

    def execute(self, context: Any) -> Any:
        if not self.deferrable:
            super().execute(context)
            return None
        trigger = LakehookConditionTrigger(
            self.lakehook_url, time.time() + self.timeout, self.rule, self.group, self.group_id, self.token
        )
        # the trigger ends itself at the deadline; Airflow's own timeout is a backstop a minute later
        self.defer(trigger=trigger, method_name="execute_complete", timeout=timedelta(seconds=self.timeout + 60))

    def execute_complete(self, context: Any, event: Mapping[str, Any]) -> list[dict[str, Any]]:
        if event["status"] == "ready":
            self.log.info("lakehook condition %s holds: %s", event["groupId"], event["pins"])
            return list(event["pins"])
        if event["status"] == "timeout":
            raise AirflowSensorTimeout(f"lakehook condition still {event['verdict']}: {event['reason']}")
        raise AirflowException(f"lakehook refused the sensor: {event.get('message')}")
