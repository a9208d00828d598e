"""A webhook receiver as a plain WSGI app (standard library only): lakehook starts a run, this app starts
the work once per trigger key, and the work reports its end and its outlet back to lakehook.

    LAKEHOOK_URL=http://127.0.0.1:3000 LAKEHOOK_TARGET_SECRET=<value of the secretRef> \
        python docs/examples/receivers/wsgi_receiver.py --port 8080

Rule target: ``{"type": "webhook", "url": "http://127.0.0.1:8080/hooks/dwd", "secretRef": "<name>"}``.
"""

from __future__ import annotations

import argparse
import os
import queue
import threading
from collections.abc import Callable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, make_server

from lakehook.receiver import CompletionClient, Invocation, WebhookReceiver, snapshot_outlet

OUTLET = "paimon://lake/dwd_db/dwd_trade_event_fact"


def build_table(invocation: Invocation) -> int:
    """Your job: read exactly the pinned snapshots, write the output; answer the output's new snapshot id."""
    for pinned in invocation.inputs:
        print(f"reading {pinned.asset_key} at snapshot {pinned.snapshot_id} (schema {pinned.schema_id})")
    return sum(p.snapshot_id or 0 for p in invocation.inputs)  # stands in for the snapshot the job commits


def make_app(
    secret: str, api_url: str, job: Callable[[Invocation], int] = build_table
) -> tuple[Callable[..., Any], threading.Thread]:
    """The WSGI app and the worker thread that runs each started job, then reports it to lakehook."""
    work: queue.Queue[Invocation] = queue.Queue()
    completions = CompletionClient(api_url)

    def worker() -> None:
        while True:
            invocation = work.get()
            try:
                snapshot = job(invocation)
            except Exception:
                completions.complete(invocation, "FAILED")
            else:
                completions.complete(invocation, "SUCCEEDED", [snapshot_outlet(OUTLET, snapshot)])

    def start(invocation: Invocation) -> str:
        work.put(invocation)  # answer at once; lakehook waits at most the target's timeoutSeconds
        return f"wsgi-{invocation.trigger_key}"

    receiver = WebhookReceiver(secret, start)  # InMemoryDedupStore: one process
    return receiver.wsgi(path="/hooks/dwd"), threading.Thread(target=worker, daemon=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args()
    app, worker = make_app(os.environ["LAKEHOOK_TARGET_SECRET"], os.environ["LAKEHOOK_URL"])
    worker.start()
    with make_server("127.0.0.1", args.port, app, handler_class=WSGIRequestHandler) as server:
        print(f"receiving on http://127.0.0.1:{args.port}/hooks/dwd")
        server.serve_forever()


if __name__ == "__main__":
    main()
