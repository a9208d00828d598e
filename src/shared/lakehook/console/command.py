"""The ``lakehook console`` subcommand: serve the console until Ctrl-C."""

from __future__ import annotations

import argparse
import webbrowser

from lakehook.cli_commands.api import ApiClient, CliError
from lakehook.cli_commands.output import err, out
from lakehook.cli_commands.parser import add_global_options
from lakehook.console.server import ConsoleServer
from lakehook.interrupts import stop_on_signals, wait_until_set

DEFAULT_PORT = 8321


def add_console_command(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    common = argparse.ArgumentParser(add_help=False)
    add_global_options(common, suppress=True)
    sub = commands.add_parser(
        "console",
        parents=[common],
        help="serve a web console on 127.0.0.1 for the stack at --url (Ctrl-C stops it)",
        description="Serve the web console on 127.0.0.1. The browser talks to this server only; it forwards the "
        "calls the pages make (reads; evaluate, retry, replay) to the API with --admin-token (a local stack) or SigV4 "
        "with your AWS credentials (a deployed stack), and refuses every other route.",
    )
    sub.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT})")
    sub.add_argument("--open", action="store_true", help="open the console in a browser")
    sub.set_defaults(func=run_console)


def run_console(args: argparse.Namespace) -> int:
    def new_client() -> ApiClient:
        return ApiClient(url=args.url, admin_token=args.api_token, region=args.region)

    console = ConsoleServer(new_client, port=args.port)
    stop = stop_on_signals()
    with console:
        print(f"lakehook console: {console.url}  (API {console.api_url}, {console.auth})", file=out(), flush=True)
        try:
            new_client().get("/rules", query={"limit": 1})
        except CliError as exc:
            print(f"lakehook: warning: the API does not answer yet: {exc}", file=err(), flush=True)
        if args.open:
            webbrowser.open(console.url)
        wait_until_set(stop)
    return 0
