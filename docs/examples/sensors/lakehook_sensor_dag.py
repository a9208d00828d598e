"""A DAG that starts on its own schedule and waits, as its first task, until lakehook says its inputs are ready.

Set the Airflow Variables ``lakehook_api_url`` (the stack's ApiUrl) and ``lakehook_token`` (management credentials;
on AWS, sign with IAM instead: see docs/sensors.md). ``rule`` names a lakehook rule whose groups describe the inputs
(it may be disabled: the sensor evaluates its condition, it starts nothing); a run's conf can name another.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, Param, task
from lakehook_airflow_sensor import LakehookSensor

with DAG(
    dag_id="lakehook_sensor_example",
    schedule=None,
    catchup=False,
    params={"rule": Param("dwd_orders", type="string")},
    tags=["lakehook"],
):
    wait = LakehookSensor(
        task_id="wait_for_inputs",
        lakehook_url="{{ var.value.lakehook_api_url }}",
        token="{{ var.value.lakehook_token }}",
        rule="{{ params.rule }}",
        timeout=600,
        deferrable=True,
    )

    @task
    def build(pins: list[dict[str, Any]]) -> str:
        """Your job: read exactly the pinned snapshots."""
        return ",".join(f"{p['assetKey']}@{p.get('snapshotId')}" for p in pins)

    build(wait.output)
