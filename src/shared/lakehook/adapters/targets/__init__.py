"""Target plug-ins: one module per target type, registered here by the type name a rule's ``target`` uses.

Adding a target type: its config model in ``lakehook.domain.targets`` (so rules validate it), a module
here with a ``TargetClient`` subclass that has a ``build(deps)`` classmethod, and one entry in
:data:`REGISTRY`. :func:`build_target_clients` builds every registered plug-in from :class:`TargetDeps`.
"""

from __future__ import annotations

from collections.abc import Callable

from lakehook.adapters.targets.airflow import AirflowTargetClient
from lakehook.adapters.targets.batch import BatchTargetClient
from lakehook.adapters.targets.databricks import DatabricksTargetClient
from lakehook.adapters.targets.deps import TargetDeps
from lakehook.adapters.targets.dolphinscheduler import DolphinSchedulerTargetClient
from lakehook.adapters.targets.ecs import EcsTargetClient
from lakehook.adapters.targets.emr_serverless import EmrServerlessTargetClient
from lakehook.adapters.targets.eventbridge import EventBridgeTargetClient
from lakehook.adapters.targets.glue import GlueTargetClient
from lakehook.adapters.targets.lambda_target import LambdaTargetClient
from lakehook.adapters.targets.stepfunctions import StepFunctionsTargetClient
from lakehook.adapters.targets.webhook import WebhookTargetClient
from lakehook.ports.dispatch import TargetClient

REGISTRY: dict[str, Callable[[TargetDeps], TargetClient]] = {
    "webhook": WebhookTargetClient.build,
    "stepfunctions": StepFunctionsTargetClient.build,
    "lambda": LambdaTargetClient.build,
    "eventbridge": EventBridgeTargetClient.build,
    "airflow": AirflowTargetClient.build,
    "dolphinscheduler": DolphinSchedulerTargetClient.build,
    "glue": GlueTargetClient.build,
    "emrserverless": EmrServerlessTargetClient.build,
    "batch": BatchTargetClient.build,
    "ecs": EcsTargetClient.build,
    "databricks": DatabricksTargetClient.build,
}
"""Target type name -> how to build its plug-in."""


def build_target_clients(deps: TargetDeps) -> dict[str, TargetClient]:
    """Every registered plug-in, by type name (what ``DispatchTrigger`` takes as ``targets``)."""
    return {name: build(deps) for name, build in REGISTRY.items()}


__all__ = ["REGISTRY", "TargetDeps", "build_target_clients"]
