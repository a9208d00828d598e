"""The downstream side of lakehook's contract, standard library only (like :mod:`lakehook.client`).

- :func:`parse_invocation` and friends: the invocation payload as typed objects (:class:`Invocation`,
  :class:`PinnedInput`), from a webhook body, Step Functions input, a Lambda or EventBridge event, Airflow's
  ``conf``, DolphinScheduler's start parameters, a job's arguments (Glue, EMR Serverless) or a container's
  environment (Batch); a partition's run names its ``partition`` and
  ``partition_values``, a replay its choices ``start_from`` and ``variables``.
- :func:`verify_signature`: a webhook delivery's ``X-Lakehook-Signature``.
- :class:`WebhookReceiver`: verify, parse, deduplicate on the trigger key, start once; ``.wsgi()`` serves it.
- :class:`InMemoryDedupStore`, :class:`DynamoDBDedupStore` (a boto3 client passed in): where seen keys live.
- :class:`CompletionClient`: report the run's end and its outlets with the invocation's completion token.
- ``Invocation.commit_properties`` (and :func:`commit_properties`): what the run sets on its commits to an
  outlet table, so that the commit confirms it (a rule with ``confirm``; docs/targets.md#confirmed-by-the-data).

See docs/targets.md for the contract and docs/examples/receivers/ for a WSGI app, a Flask app, an Airflow 3
DAG and a Step Functions task.
"""

from __future__ import annotations

from lakehook.client.outlets import TRIGGER_KEY_PROPERTY, commit_properties
from lakehook.client.signing import (
    IDEMPOTENCY_HEADER,
    SIGNATURE_HEADER,
    TRIGGER_KEY_HEADER,
    SignatureError,
    sign,
    verify_signature,
)
from lakehook.receiver.completion import (
    COMPLETION_TOKEN_HEADER,
    Completion,
    CompletionClient,
    CompletionError,
    CompletionRejectedError,
    CompletionUnavailableError,
    OutletResult,
    snapshot_outlet,
)
from lakehook.receiver.dedup import DedupStore, DynamoDBDedupStore, InMemoryDedupStore, Seen
from lakehook.receiver.payload import (
    Interval,
    InvalidPayloadError,
    Invocation,
    PinnedInput,
    from_dolphinscheduler_params,
    from_environment,
    from_eventbridge_event,
    from_job_arguments,
    parse_invocation,
)
from lakehook.receiver.webhook import Answer, WebhookReceiver

__all__ = [
    "COMPLETION_TOKEN_HEADER",
    "IDEMPOTENCY_HEADER",
    "SIGNATURE_HEADER",
    "TRIGGER_KEY_HEADER",
    "TRIGGER_KEY_PROPERTY",
    "Answer",
    "Completion",
    "CompletionClient",
    "CompletionError",
    "CompletionRejectedError",
    "CompletionUnavailableError",
    "DedupStore",
    "DynamoDBDedupStore",
    "InMemoryDedupStore",
    "Interval",
    "InvalidPayloadError",
    "Invocation",
    "OutletResult",
    "PinnedInput",
    "Seen",
    "SignatureError",
    "WebhookReceiver",
    "commit_properties",
    "from_dolphinscheduler_params",
    "from_environment",
    "from_eventbridge_event",
    "from_job_arguments",
    "parse_invocation",
    "sign",
    "snapshot_outlet",
    "verify_signature",
]
