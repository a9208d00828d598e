"""``make demo``: the RFC's GMV scenario, ODS -> DWD -> DWS -> ADS, on the local stack with real tables.

Paimon ODS tables in an S3 warehouse and Iceberg DWD/DWS/ADS tables in a Glue catalog, all on the local
moto server; a Flink-CDC-like writer pushing signed webhooks (one duplicated, one late, one lost and
recovered by polling, one failed quality check); three downstream jobs served on 127.0.0.1 that read
exactly the pinned snapshots, write the next layer and report completion, so the chain runs with no cron.

Every step prints what a user would see and checks what must hold; the exit status is 0 only if every
expectation held. The web console (``lakehook console``) serves the stack on 127.0.0.1 while the story runs;
with ``--keep`` (``make demo KEEP=1``) the stack and the console stay up until Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from lakehook.cli_commands.api import ApiClient
from lakehook.console.command import DEFAULT_PORT
from lakehook.console.server import ConsoleServer
from lakehook.demo.api import Api
from lakehook.demo.consumers import Consumers
from lakehook.demo.gmv import layers
from lakehook.demo.lake import Lake
from lakehook.demo.quiet import without_metric_lines
from lakehook.demo.story import STEPS, Story
from lakehook.demo.summary import summarize
from lakehook.demo.view import make_view
from lakehook.interrupts import stop_on_signals, wait_until_set
from lakehook.local.runtime import LocalStack

ADMIN = "demo-admin"
POLL_EVERY_SECONDS = 1.0


def console_for(api_url: str) -> ConsoleServer:
    """The console on its usual port, or on a free one when that is taken."""

    def new_client() -> ApiClient:
        return ApiClient(url=api_url, admin_token=ADMIN)

    try:
        return ConsoleServer(new_client, port=DEFAULT_PORT)
    except OSError:
        return ConsoleServer(new_client, port=0)


def wait_for_ctrl_c(stack_url: str, console_url: str) -> None:
    stop = stop_on_signals()
    print(f"\nkept up until Ctrl-C: the console {console_url}, the API {stack_url} (admin token {ADMIN})", flush=True)
    wait_until_set(stop)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lakehook.demo", description="the GMV demo on the local stack")
    parser.add_argument("--keep", action="store_true", help="keep the stack and the console up until Ctrl-C")
    keep = parser.parse_args(argv).keep
    started = time.perf_counter()
    print("lakehook demo: the GMV chain on the local stack (moto on 127.0.0.1 + the functions of template.yaml)")
    quiet = {"POWERTOOLS_METRICS_DISABLED": "true", "POWERTOOLS_LOG_LEVEL": "ERROR"}  # keep the story readable
    with (
        without_metric_lines() as terminal,
        LocalStack(port=0, admin_token=ADMIN, extra_env=quiet, poll_every=POLL_EVERY_SECONDS) as stack,
    ):
        print(f"   API {stack.api_url}, moto {stack.endpoint_url}")
        console = console_for(stack.api_url).start()
        print(f"   console {console.url}  (watch the story live; `make demo KEEP=1` keeps it up at the end)")
        lake = Lake(stack.endpoint_url)
        consumers = Consumers(lake, stack.api_url, layers(), fail_once="dws_gmv_daily")
        consumers.start()
        view = make_view(STEPS + 1, terminal)
        api = Api(stack.api_url, ADMIN, say=view.say)
        story = Story(api, lake, consumers, view, stack.endpoint_url)
        try:
            with view:
                story.run()
                summarize(story)
            took = time.perf_counter() - started
            held = len(api.expectations) - len(api.failures)
            print(f"\n{held}/{len(api.expectations)} expectations held in {took:.1f} s")
            if api.failures:
                print("failed: " + "; ".join(e.what for e in api.failures))
            if keep:
                wait_for_ctrl_c(stack.api_url, console.url)
        finally:
            console.stop()
            consumers.stop()
            api.session.close()
    return 1 if api.failures else 0


if __name__ == "__main__":
    sys.exit(main())
