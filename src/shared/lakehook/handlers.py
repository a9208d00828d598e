"""What the stream- and schedule-triggered functions call: a batch in, the container's use case, the answer out.

The resolver and dispatcher answer Lambda's partial batch response; the deferral sweep and the trigger
compensator answer counts. Each takes a :class:`Container` (tests) or uses the process's one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from lakehook.container import Container, current
from lakehook.observability import logger

# --- ResolverFunction ------------------------------------------------------------------------------------


def handle_stream_batch(
    event: Mapping[str, Any], container: Container | None = None, time_left: Callable[[], int] | None = None
) -> dict[str, Any]:
    """Resolve one stream batch as a whole (``{"Records": [...]}``); answer the partial-failure response.

    The batch is resolved together (assets deduplicated, one batched read). A rule that raises is recorded on
    the rule and retried by the sweep; the rest of the batch goes on. On an infrastructure error the first
    record is reported failed, so Lambda retries the whole batch in order (claims are idempotent), and rechecks
    of its assets are left first, so the sweep re-evaluates them even if Lambda finally gives the batch up.
    """
    from lakehook.adapters.dynamodb.stream_records import resolver_input, sequence_number
    from lakehook.ports.rules import Deferral, StateChange

    records = list(event.get("Records") or [])
    try:
        parsed = [resolver_input(r) for r in records]
        changes = [p for p in parsed if isinstance(p, StateChange)]
        deferred = [p for p in parsed if isinstance(p, Deferral)]
        if changes or deferred:
            (container or current()).resolver(changes, deferred, time_left=time_left)
    except Exception:
        logger.exception("resolver batch failed", extra={"status": "FAILED", "reason": "retrying the batch"})
        first = sequence_number(records[0])
        return {"batchItemFailures": [{"itemIdentifier": first}] if first else []}
    return {"batchItemFailures": []}


def handle_resolver_queue(
    event: Mapping[str, Any], container: Container | None = None, time_left: Callable[[], int] | None = None
) -> dict[str, Any]:
    """Resolve the resolver queue's messages (``{"Records": [...]}`` from SQS), each on its own: a slice of a commit's
    partitions or a partitioned group's carried-over work (:mod:`lakehook.usecases.resolve_continue`), each bounded.
    A message that fails (or does not parse) is reported, so SQS hands it over again and, after its receives, keeps
    it in the dead-letter queue."""
    import json

    from lakehook.ports.rules import PartitionWork
    from lakehook.usecases.resolve_continue import work_of

    failed: list[dict[str, str]] = []
    for record in event.get("Records") or []:
        message_id = str(record.get("messageId", ""))
        try:
            work = work_of(json.loads(record["body"]))
            resolver = (container or current()).resolver
            if isinstance(work, PartitionWork):
                resolver(carried=[work], time_left=time_left)
            else:
                resolver([work], time_left=time_left)
        except Exception:
            logger.exception("resolver work failed", extra={"status": "FAILED", "reason": "received again later"})
            failed.append({"itemIdentifier": message_id})
    return {"batchItemFailures": failed}


def handle_stream_record(record: Mapping[str, Any], container: Container | None = None) -> None:
    """Resolve one stream record (a Powertools ``record_handler``); raises so the batch processor retries it.

    Prefer :func:`handle_stream_batch`: per-record handling costs one batched read per record, and a
    failed record followed by a successful one lets an EACH_VERSION rule claim the later version first.
    """
    from lakehook.adapters.dynamodb.stream_records import resolver_input
    from lakehook.ports.rules import Deferral, StateChange

    found = resolver_input(record)
    if isinstance(found, StateChange):
        (container or current()).resolver([found])
    elif isinstance(found, Deferral):
        (container or current()).resolver(deferred=[found])


# --- DeferralSweepFunction -------------------------------------------------------------------------------


def sweep_deferred(container: Container | None = None) -> int:
    """The scheduled sweep: mark due deferrals; answer how many."""
    return len((container or current()).sweeper())


def sweep_not_advanced(container: Container | None = None) -> list[str]:
    """The scheduled sweep's other part: started runs whose confirm window passed with no outlet commit carrying
    their key become NOT_ADVANCED; answer their trigger keys."""
    return (container or current()).sweep_not_advanced()


# --- DispatcherFunction ----------------------------------------------------------------------------------


def handle_dispatch_batch(event: Mapping[str, Any], container: Container | None = None) -> dict[str, Any]:
    """Dispatch a DynamoDB stream batch of claims (``{"Records": [...]}``) in order; answer the partial
    batch response. On an error the failed record is reported and the rest left for the retry (Lambda
    resumes from the lowest reported sequence number); dispatch is idempotent, so redelivery is safe."""
    wired = container or current()
    for record in event.get("Records") or []:
        try:
            wired.dispatch_record(record)
        except Exception:
            sequence = (record.get("dynamodb") or {}).get("SequenceNumber")
            logger.exception("dispatch record failed", extra={"status": "FAILED", "reason": "retrying from here"})
            return {"batchItemFailures": [{"itemIdentifier": sequence}] if sequence else []}
    return {"batchItemFailures": []}


# --- TriggerRedriveFunction ------------------------------------------------------------------------------


def redrive_triggers(container: Container | None = None) -> dict[str, int]:
    """The compensator's scheduled pass over stuck and failed claims; answers counts per status."""
    report = (container or current()).redriver()
    counts: dict[str, int] = {}
    for result in report.results:
        counts[result.status.value] = counts.get(result.status.value, 0) + 1
    if report.slots.released or report.slots.woken:
        counts["SLOTS_RELEASED"], counts["SLOTS_WOKEN"] = len(report.slots.released), len(report.slots.woken)
    return counts
