"""The ``lakehook`` command line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from itertools import pairwise
from typing import NoReturn

from lakehook.cli_commands.output import err, report_error
from lakehook.cli_commands.parser import add_commands, add_global_options
from lakehook.console.command import add_console_command
from lakehook.interrupts import stop_on_signals, wait_until_set
from lakehook.version import __version__


def _local_up(args: argparse.Namespace) -> int:
    from lakehook.local.logs import configure
    from lakehook.local.runtime import LocalStack

    configure(args.log_format, sys.stdout)

    stack = (
        LocalStack(
            template=args.template,
            host=args.host,
            port=args.port,
            admin_token=args.admin_token,
            poll_every=args.poll_every,
        )
        if args.template
        else LocalStack(host=args.host, port=args.port, admin_token=args.admin_token, poll_every=args.poll_every)
    )
    stop = stop_on_signals()
    stack.start()
    try:
        routes = sum(len(f.spec.routes) for f in stack.functions)
        print(f"lakehook local stack: API {stack.api_url}  (moto {stack.endpoint_url})", flush=True)
        print(f"functions: {', '.join(f.spec.name for f in stack.functions)}; {routes} routes", flush=True)
        print(f"ready: {stack.api_url}", flush=True)
        wait_until_set(stop)
    finally:
        print("stopping", flush=True)
        stack.stop()
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, but with ``--output json`` anywhere on the line a usage error is a JSON document on stdout."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        if _Parser.json_errors:
            report_error("json", ValueError(f"{self.prog}: {message}"), exit_code=2)
            raise SystemExit(2)
        super().error(message)


def _wants_json(argv: Sequence[str]) -> bool:
    words = list(argv)
    return "--output=json" in words or any(pair == ("--output", "json") for pair in pairwise(words))


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="lakehook", description="lakehook: data-state triggers for lakehouses")
    parser.add_argument("--version", action="version", version=f"lakehook {__version__}")
    parser.add_argument("--log-level", default="WARNING", help="Python log level for the CLI (default WARNING)")
    add_global_options(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    local = commands.add_parser("local", help="the local stack (moto + the template's functions)")
    local_commands = local.add_subparsers(dest="local_command", required=True)
    up = local_commands.add_parser("up", help="start the local stack; Ctrl-C stops it")
    up.add_argument("--host", default="127.0.0.1", help="loopback address to listen on")
    up.add_argument("--port", type=int, default=3000, help="API port (0 picks a free one)")
    up.add_argument("--admin-token", default="local-admin", help="bearer token for management routes")
    up.add_argument(
        "--poll-every",
        type=float,
        default=None,
        metavar="SECONDS",
        help="fire every schedule at this period instead of its rate",
    )
    up.add_argument("--template", default=None, help="path to template.yaml (default: the project's)")
    up.add_argument(
        "--log-format",
        choices=["auto", "human", "json"],
        default="auto",
        help="function and runtime logs: one compact line each (human), or JSON as on AWS (json); "
        "auto (default) is human on a terminal, json otherwise",
    )
    up.set_defaults(func=_local_up)
    add_commands(commands)
    add_console_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; answer its exit code. Nothing raises out of here but argparse's SystemExit (usage
    errors, ``--help``, ``--version``): a failure is one ``lakehook: error:`` line, never a traceback."""
    words = sys.argv[1:] if argv is None else argv
    output = "json" if _wants_json(words) else "text"
    try:
        parser = build_parser()
        _Parser.json_errors = output == "json"
        args = parser.parse_args(argv)
        output = args.output
        logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        return int(args.func(args))
    except BrokenPipeError:
        # The reader went away (`lakehook triggers | head`): stop quietly, as cat or grep do. Point stdout at
        # /dev/null so the interpreter's final flush does not raise again.
        _silence_stdout()
        return 141  # 128 + SIGPIPE, what a shell reports for a command killed by a closed pipe
    except KeyboardInterrupt:
        print("lakehook: interrupted", file=err(), flush=True)
        return 130  # 128 + SIGINT, what a shell reports for a command stopped with Ctrl-C
    except UnicodeEncodeError as exc:  # an argument from bytes that are not UTF-8 (Python keeps them as surrogates)
        bad = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
        problem = f"an argument or input is not UTF-8 text ({bad!r}); pass UTF-8"
        return report_error(output, ValueError(problem), exit_code=2)
    except RecursionError:
        return report_error(output, ValueError("the input nests too deeply to handle"), exit_code=2)
    except (ValueError, OSError) as exc:
        return report_error(output, exc, exit_code=2)
    except Exception as exc:  # a defect: still one line, the traceback only at --log-level DEBUG
        logging.getLogger("lakehook.cli").debug("unexpected error", exc_info=True)
        problem = f"unexpected {type(exc).__name__}: {exc} (a lakehook defect; --log-level DEBUG shows where)"
        return report_error(output, RuntimeError(problem), exit_code=1)


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout without a file descriptor (captured): nothing will flush it
        pass


if __name__ == "__main__":
    sys.exit(main())
