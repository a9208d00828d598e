"""An Airflow 3 DAG started by lakehook's ``airflow`` target: the invocation payload is the DAG run's ``conf``.

Rule target: ``{"type": "airflow", "baseUrl": "https://airflow.example.com", "dagId": "dwd_trade_event_fact",
"credentialsRef": "<secret>"}``. Airflow itself deduplicates: the DAG run id is ``lakehook__<trigger key>``
and a second start answers 409, so the DAG needs no dedup store. ``build_from_conf`` is a plain function
(tested without Airflow); the DAG below only wires it to the task context. Set the Airflow Variable
``lakehook_api_url`` (the stack's ApiUrl) so the task can report its end.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lakehook.receiver import Completion, CompletionClient, parse_invocation, snapshot_outlet

OUTLET = "paimon://lake/dwd_db/dwd_trade_event_fact"


def build_from_conf(conf: Mapping[str, Any], api_url: str) -> Completion:
    """Read the pinned snapshots from ``conf``, build the table, report the new snapshot as the outlet."""
    invocation = parse_invocation(conf)
    pinned = {p.asset_key: p.snapshot_id for p in invocation.inputs}
    snapshot = sum(s or 0 for s in pinned.values())  # your job reads exactly these snapshots and commits one
    return CompletionClient(api_url).complete(invocation, "SUCCEEDED", [snapshot_outlet(OUTLET, snapshot)])


try:
    from airflow.sdk import DAG, Variable, task
except ImportError:  # imported without Airflow: the tests use build_from_conf alone
    DAG = None

if DAG is not None:
    with DAG(dag_id="dwd_trade_event_fact", schedule=None, catchup=False, tags=["lakehook"]):

        @task
        def build(**context: Any) -> str:
            completion = build_from_conf(context["dag_run"].conf, Variable.get("lakehook_api_url"))
            return completion.status

        build()
